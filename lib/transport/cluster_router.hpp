#pragma once

// A quorum member that is a Redis Cluster: each lock's commands go to the
// master of the lock's slot (every key of a lock shares one hash tag). The
// slot map comes from CLUSTER SLOTS, asked of a seed first and of the known
// masters later: at start, every refresh_interval, and soon after a MOVED, a
// request that got no answer, or CLUSTERDOWN/TRYAGAIN/READONLY. MOVED is
// followed at once (the map updated, the request resent), ASK once (ASKING
// first). Which slots do not count toward a quorum after a failover is
// cluster_routing's (sansio) rule.

#include "redlock/config.hpp"
#include "sansio/cluster_routing.hpp"
#include "transport/routed_member.hpp"

#include <uv.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

class node_connection;

class cluster_router final : public routed_member {
public:
    cluster_router(const member_parts& parts, const cluster_member& member, std::string name);

    void start() override;
    void close(std::function<void()> done) override;
    [[nodiscard]] auto quarantined_until(std::uint16_t slot) const noexcept
        -> std::chrono::steady_clock::time_point override;
    [[nodiscard]] auto topology() const -> std::vector<std::string> override;
    [[nodiscard]] auto serving(std::uint16_t slot) const noexcept -> node_connection* override {
        const auto n = routing_.node_of(slot);
        return n && *n < by_node_.size() ? by_node_[*n] : nullptr;
    }
    void watch(const std::string& channel, std::uint16_t slot, bool on) override;
    [[nodiscard]] auto settling(std::uint16_t slot) const noexcept -> bool override;
    [[nodiscard]] auto hears_wakeups() const noexcept -> bool override;

    /// The connections to the cluster's nodes (seeds first), for metrics.
    [[nodiscard]] auto connections() const -> std::vector<const node_connection*>;

private:
    auto connection_for(std::uint16_t slot, std::string& why, bool& park)
        -> node_connection* override;
    /// No node serves `slot`: says so in `why`, and reads the map again soon.
    [[gnu::noinline, gnu::cold]] void unrouted(std::uint16_t slot, std::string& why);
    auto redirected(const redirection& r) -> node_connection* override;
    void trouble(std::uint16_t slot) override;
    void on_internal(std::uint32_t tag, const reply_event& event) override;

    /// How a node the cluster named is reached: like the first seed.
    [[nodiscard]] auto discovered(const std::string& host, std::uint16_t port) const
        -> node_address;
    /// The connection to `host:port`, opened if new.
    auto connect(const std::string& host, std::uint16_t port) -> node_connection&;
    void connect_new(const cluster_routing::change& c);
    /// Where a CLUSTER SLOTS goes: a connection, and the host it was reached at.
    struct slot_source {
        node_connection* from = nullptr;
        std::string host;
    };
    /// Asks for the slot map now: of every source while there is no map, else of
    /// the next source in turn.
    void look_again() override;
    void on_slots(const slot_source& source, const reply_event& event);
    /// The round's errors, "; "-separated, each naming its node.
    [[nodiscard]] auto joined_errors() const -> std::string;
    /// SSUBSCRIBEs `channel` where its slot is served now (and leaves where it was).
    void subscribe_where_due(const std::string& channel);
    /// Node `n`'s subscriber connection, opened if new.
    auto subscriber(std::size_t n) -> node_connection&;

    const cluster_member& member_;
    cluster_routing routing_;
    std::map<std::string, std::unique_ptr<node_connection>> connections_;  // by "host:port"
    std::vector<node_connection*> seeds_;
    std::vector<node_connection*> by_node_;  // routing_'s node index -> its connection
    // Wake-ups: a subscriber connection per master that serves a watched shard
    // channel, and each watched channel's slot and the node it is subscribed at.
    std::map<std::size_t, std::unique_ptr<node_connection>> subscribers_;
    struct watched {
        std::uint16_t slot = 0;
        std::optional<std::size_t> at;
        bool confirmed = false;  // the SSUBSCRIBE at `at` was answered
    };
    std::map<std::string, watched> watched_;
    std::size_t next_source_ = 0;
    std::vector<slot_source> asked_;         // this round's sources, by the tag's index
    std::size_t asks_out_ = 0;               // of them, still unanswered
    bool round_mapped_ = false;              // one of them answered a good map
    std::vector<std::string> round_errors_;  // the others' errors, each naming its node
    std::string last_error_;
    bool gave_up_ = false;  // a round without a map failed what waited for one
    bool closing_ = false;
    int closes_pending_ = 0;
    std::function<void()> on_closed_;
};

}  // namespace redlock::detail
