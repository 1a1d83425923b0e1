#pragma once

// One member of the quorum, whatever it is: a standalone master (one
// connection), a Redis Cluster or a Sentinel-managed master (a routed_member).
// The standalone path is one branch away from the connection: the hot path of
// the usual deployment pays nothing for the other kinds.

#include "transport/node_connection.hpp"
#include "transport/routed_member.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
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
    /// A request for `slot` waits on the member's first connection (or first map).
    [[nodiscard]] auto settling(std::uint16_t slot) const noexcept -> bool {
        return node_ ? node_->settling() : routed_->settling(slot);
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
    /// A lock was granted without this member: its grant failed (`why`). Counted for the
    /// metrics (node_grants_missed_total); the first one is logged, so a one-shot process
    /// says once which member its lock is not on, and a service is not flooded. Loop thread.
    void missed_grant(const client_config& config, std::string_view why) {
        grants_missed_.fetch_add(1, std::memory_order_relaxed);
        if (std::exchange(missed_logged_, true)) return;
        log_warning(config, "redlock: " + name() + ": a lock was granted without this member (" +
                                std::string{why} +
                                "); it holds on the others' majority. Later grants without it "
                                "are counted (node_grants_missed_total), not logged");
    }
    /// Locks granted without this member (any thread).
    [[nodiscard]] auto grants_missed() const noexcept -> std::uint64_t {
        return grants_missed_.load(std::memory_order_relaxed);
    }
    /// The standalone master's connection; null for a cluster or Sentinel member.
    [[nodiscard]] auto standalone() const noexcept -> node_connection* { return node_.get(); }
    /// A cluster or Sentinel member; null for a standalone master.
    [[nodiscard]] auto routed() const noexcept -> routed_member* { return routed_.get(); }

private:
    std::unique_ptr<node_connection> node_;
    std::unique_ptr<routed_member> routed_;
    std::atomic<std::uint64_t> grants_missed_{0};
    bool missed_logged_ = false;
};

}  // namespace redlock::detail
