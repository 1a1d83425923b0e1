#pragma once

// One member of the quorum, whatever it is: a standalone master (one
// connection), a Redis Cluster or a Sentinel-managed master (a routed_member).
// The standalone path is one branch away from the connection: the hot path of
// the usual deployment pays nothing for the other kinds.

#include "transport/node_connection.hpp"
#include "transport/routed_member.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

class quorum_member {
public:
    explicit quorum_member(std::unique_ptr<node_connection> node) : node_{std::move(node)} {}
    explicit quorum_member(std::unique_ptr<routed_member> routed) : routed_{std::move(routed)} {}

    /// Queues `encoded`, whose keys hash to `slot`, on the node that serves it.
    /// `replicated`: a write that counts only once wait_replicas replicas have it.
    auto send(std::string_view encoded, reply_sink* sink, std::uint32_t tag, std::uint16_t slot,
              bool replicated) -> std::uint32_t {
        if (node_) return node_->send(encoded, sink, tag);
        return routed_->send(encoded, sink, tag, slot, replicated);
    }
    auto disown(std::uint32_t number, const reply_sink* sink) noexcept -> bool {
        return node_ ? node_->disown(number, sink) : routed_->disown(number, sink);
    }
    [[nodiscard]] auto name() const noexcept -> const std::string& {
        return node_ ? node_->name() : routed_->name();
    }
    /// name(), as reports carry it (shared, not copied).
    [[nodiscard]] auto report_name() const noexcept -> const node_name& {
        return node_ ? node_->report_name() : routed_->report_name();
    }
    [[nodiscard]] auto quarantined_until(std::uint16_t slot) const noexcept
        -> std::chrono::steady_clock::time_point {
        return node_ ? node_->quarantined_until() : routed_->quarantined_until(slot);
    }
    /// The connection serving `slot` now, or null (a routed member that knows of none).
    [[nodiscard]] auto serving(std::uint16_t slot) const noexcept -> node_connection* {
        return node_ ? node_.get() : routed_->serving(slot);
    }
    void start() {
        if (node_) {
            node_->start();
        } else {
            routed_->start();
        }
    }
    void close(std::function<void()> done) {
        if (node_) {
            node_->close(std::move(done));
        } else {
            routed_->close(std::move(done));
        }
    }
    /// The standalone master's connection; null for a cluster or Sentinel member.
    [[nodiscard]] auto standalone() const noexcept -> node_connection* { return node_.get(); }
    /// A cluster or Sentinel member; null for a standalone master.
    [[nodiscard]] auto routed() const noexcept -> routed_member* { return routed_.get(); }

private:
    std::unique_ptr<node_connection> node_;
    std::unique_ptr<routed_member> routed_;
};

}  // namespace redlock::detail
