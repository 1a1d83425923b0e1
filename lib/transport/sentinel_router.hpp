#pragma once

// A quorum member that is a master managed by Redis Sentinel. The sentinels
// are asked where the master is (in turn, at start, every refresh_interval and
// soon after trouble), and each one's +switch-master is followed. A new master
// address means a failover: the new master may lack keys the old one granted
// and had not replicated, so its grants do not count for restart_quarantine
// (unless wait_replicas guards the writes instead). The master's connection
// checks on every connect that the node is a master (node_handshake), so the
// member never writes to a replica that a stale answer named.

#include "redlock/config.hpp"
#include "sansio/sentinel_replies.hpp"
#include "transport/routed_member.hpp"

#include <uv.h>

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

class node_connection;

class sentinel_router final : public routed_member {
public:
    sentinel_router(const member_parts& parts, const sentinel_member& member, std::string name);

    void start() override;
    void close(std::function<void()> done) override;
    [[nodiscard]] auto quarantined_until(std::uint16_t slot) const noexcept
        -> std::chrono::steady_clock::time_point override;
    [[nodiscard]] auto topology() const -> std::vector<std::string> override;
    [[nodiscard]] auto serving(std::uint16_t slot) const noexcept -> node_connection* override {
        (void)slot;
        return master_.get();
    }
    [[nodiscard]] auto settling(std::uint16_t slot) const noexcept -> bool override {
        (void)slot;
        if (!address_) return !gave_up_;
        return master_ && master_->settling();
    }
    [[nodiscard]] auto hears_wakeups() const noexcept -> bool override {
        return master_subscriber_ && master_subscriber_->subscribed();
    }
    /// The master's connection, if one is known (for metrics).
    [[nodiscard]] auto master() const noexcept -> const node_connection* { return master_.get(); }
    /// The connections that ask the sentinels, in configuration order: `redlock check` asks
    /// them its own questions on them (SENTINEL MASTER, SENTINEL REPLICAS).
    [[nodiscard]] auto sentinel_links() const noexcept
        -> const std::vector<std::unique_ptr<node_connection>>& {
        return sentinels_;
    }

private:
    auto connection_for(std::uint16_t slot, std::string& why, bool& park)
        -> node_connection* override;
    void trouble(std::uint16_t slot) override;
    void on_internal(std::uint32_t tag, const reply_event& event) override;

    /// Asks the next sentinel in turn where the master is.
    void look_again() override;
    void switch_to(const master_address& address, std::string_view how);
    void on_switch_message(std::string_view payload);
    void retire(std::unique_ptr<node_connection> c, std::chrono::milliseconds after);
    void closed_one();

    const sentinel_member& member_;
    client_config sentinel_config_;  // the client's, with the sentinels' credentials
    std::vector<std::unique_ptr<node_connection>> sentinels_;
    std::vector<std::unique_ptr<node_connection>> subscribers_;
    std::unique_ptr<node_connection> master_;
    std::unique_ptr<node_connection> master_subscriber_;  // this client's wake channel
    std::optional<master_address> address_;
    std::list<std::unique_ptr<node_connection>> retired_;
    std::chrono::steady_clock::time_point quarantined_until_{};
    std::size_t next_sentinel_ = 0;
    std::size_t failed_asks_ = 0;
    bool asking_ = false;
    bool gave_up_ = false;  // every sentinel asked without a master: what waited failed
    std::string last_error_;
    bool closing_ = false;
    int closes_pending_ = 0;
    std::function<void()> on_closed_;
};

}  // namespace redlock::detail
