#pragma once

// What a quorum member that is more than one connection does with a request:
// a cluster (the master of the lock's slot) or a Sentinel-managed master (the
// master Sentinel names now). The usual request goes straight on the connection
// with its operation's sink (numbered by route_ids), and only an outcome that is
// not a plain answer comes back here (on_unusual): a MOVED or ASK is followed
// from the member's own table, where requests are numbered so that one can move
// to another node and still be disowned by its number. With wait_replicas a
// write goes through the table too, followed by WAIT, and its answer is handed
// on only when WAIT says enough replicas have it (sansio/owned_reply:
// replica_ack). Until the member knows where anything goes, requests are parked;
// a request that cannot be placed fails on a later turn, never inside send().

#include "sansio/cluster_replies.hpp"
#include "sansio/owned_reply.hpp"
#include "sansio/reply.hpp"
#include "transport/metrics_recorder.hpp"
#include "transport/node_connection.hpp"
#include "transport/route_ids.hpp"
#include "transport/timer_queue.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

class random_source;
class tls_context;
class write_batcher;

/// What every member is made with: the client's loop, batcher, configuration (it outlives
/// the members), random source, connection counters, timers and TLS context.
struct member_parts {
    uv_loop_t* loop;
    write_batcher& batcher;
    const client_config& config;
    random_source& rng;
    connection_counters& counters;
    timer_queue& timers;
    std::shared_ptr<const tls_context> tls;
};

class routed_member : protected reply_sink, private reply_watcher {
public:
    /// WAIT, with wait_replicas, waits at most the config's request_timeout.
    routed_member(const member_parts& parts, std::string name, int wait_replicas);
    routed_member(const routed_member&) = delete;
    auto operator=(const routed_member&) -> routed_member& = delete;
    ~routed_member() override;

    /// As node_connection::send, for a command whose keys hash to `slot`.
    /// `replicated`: a write that counts only once wait_replicas replicas have it.
    auto send(std::string_view encoded, reply_sink* sink, std::uint32_t tag, std::uint16_t slot,
              bool replicated) -> std::uint32_t;
    auto disown(std::uint32_t number, const reply_sink* sink) noexcept -> bool;
    [[nodiscard]] auto name() const noexcept -> const std::string& { return name_; }
    /// The same, as reports carry it (shared, not copied).
    [[nodiscard]] auto report_name() const noexcept -> const node_name& { return report_name_; }
    /// The member's counters as one node's, for client::metrics() (any thread):
    /// answers it failed to give, and `up` while it knows where to send.
    [[nodiscard]] auto metrics() const noexcept -> const node_counters& { return metrics_; }
    /// What the member's own connections counted (requests, writes, connects…), for
    /// client::stats(); read from any thread.
    [[nodiscard]] auto traffic() const noexcept -> const connection_counters& {
        return own_counters_;
    }

    virtual void start() = 0;
    /// Fails what is pending with `stopped`, closes every connection, then `done`.
    virtual void close(std::function<void()> done) = 0;
    /// Until when grants for `slot` do not count.
    [[nodiscard]] virtual auto quarantined_until(std::uint16_t slot) const noexcept
        -> std::chrono::steady_clock::time_point = 0;
    /// Where release notifications go: this client's classic channel (subscribed to on
    /// the member's masters), and what to do with each message. Call before start().
    void set_wake(std::string client_channel, std::function<void(std::string_view)> on_message) {
        wake_channel_ = std::move(client_channel);
        on_wake_ = std::move(on_message);
    }
    /// A waiter of this client listens on shard `channel` (in `slot`) from now on
    /// (`on`), or no one does any more. Only a cluster member has shard channels.
    virtual void watch(const std::string& channel, std::uint16_t slot, bool on) {
        (void)channel;
        (void)slot;
        (void)on;
    }
    /// Whether a release notification can reach this client's waiters now: every
    /// subscription the member needs is confirmed.
    [[nodiscard]] virtual auto hears_wakeups() const noexcept -> bool { return true; }
    /// The connection serving `slot` now (its master's), or null: a renewal
    /// probes its clock there (node_connection::probe_clock).
    [[nodiscard]] virtual auto serving(std::uint16_t slot) const noexcept -> node_connection* = 0;
    /// Whether a request for `slot` waits on the member's first set-up: its first slot map
    /// or master address, not yet given up on, or the first connection to the node serving it.
    [[nodiscard]] virtual auto settling(std::uint16_t slot) const noexcept -> bool = 0;
    /// A line per node for `redlock check`: who serves what, and what is in quarantine.
    [[nodiscard]] virtual auto topology() const -> std::vector<std::string> = 0;

protected:
    /// Tags of the member's own requests (slot maps, sentinel questions) carry this bit.
    static constexpr std::uint32_t internal_tag = 1U << 31;

    /// The connection for `slot` now; null with `why` set when none can take it.
    /// `parked` set: nothing is known yet, keep the request until it is.
    virtual auto connection_for(std::uint16_t slot, std::string& why, bool& park)
        -> node_connection* = 0;
    /// A MOVED or ASK: the connection to send to instead (null: none).
    virtual auto redirected(const redirection& r) -> node_connection* {
        (void)r;
        return nullptr;
    }
    /// A request on `slot` failed (no answer, or an error that calls for a new look).
    virtual void trouble(std::uint16_t slot) { (void)slot; }
    /// A reply to one of the member's own requests.
    virtual void on_internal(std::uint32_t tag, const reply_event& event) = 0;

    /// Routes what was parked, now that something is known.
    void dispatch_parked();
    /// Fails what was parked, on a later turn, with `why`.
    void fail_parked(const std::string& why);
    /// Reads the topology again (a cluster's slot map, the sentinels' answer).
    virtual void look_again() = 0;
    /// look_again() after `delay`, unless one is already due sooner. Nothing after stop_looking().
    void look_again_after(std::chrono::milliseconds delay);
    /// Closing: no look_again() from now on.
    void stop_looking() noexcept;
    /// Fails every request still owed an answer with `stopped` (closing).
    void stop_all() noexcept;
    [[nodiscard]] auto timers() noexcept -> timer_queue& { return timers_; }
    [[nodiscard]] auto parts() const noexcept -> const member_parts& { return parts_; }
    /// A connection to `address` with `config`'s settings (the client's, or the
    /// sentinels' credentials), counted in own_counters(). Not started.
    [[nodiscard]] auto open_connection(node_address address, const client_config& config)
        -> std::unique_ptr<node_connection>;
    /// How long a new master's grants do not count after a failover: restart_quarantine
    /// (default lock.ttl), or none when wait_replicas guards the writes instead.
    [[nodiscard]] auto failover_quarantine() const noexcept -> std::chrono::milliseconds;
    /// The member can take requests (or no longer can): counted once in the
    /// client's connected nodes, as a standalone master's connection is.
    [[nodiscard]] auto wake_channel() const noexcept -> const std::string& { return wake_channel_; }
    [[nodiscard]] auto on_wake() const -> const std::function<void(std::string_view)>& {
        return on_wake_;
    }
    void set_up(bool up) noexcept {
        if (metrics_.up.exchange(up, std::memory_order_relaxed) == up) return;
        if (up) {
            client_counters_->connected.fetch_add(1, std::memory_order_relaxed);
        } else {
            client_counters_->connected.fetch_sub(1, std::memory_order_relaxed);
        }
    }
    /// The counters the member's own connections write: its connections are
    /// not the client's nodes (stats().nodes_connected counts members).
    [[nodiscard]] auto own_counters() noexcept -> connection_counters& { return own_counters_; }

private:
    struct request {
        reply_sink* sink = nullptr;
        std::uint32_t tag = 0;
        std::uint16_t slot = 0;
        bool replicated = false;
        bool live = false;  // the slot is in use
        bool done = false;  // answered or disowned: later answers are dropped
        bool parked = false;
        std::uint8_t round = 0;        // sends so far; answers of an older round are dropped
        std::uint8_t redirects = 0;    // MOVED/ASK followed
        std::uint8_t owed = 0;         // answers still to come from connections
        std::uint16_t generation = 0;  // bumped at each reuse: a stale number disowns nothing
        std::uint32_t origin = 0;      // redirected from a direct request: the number it had
        std::string command;           // encoded, for a resend
        owned_reply held;              // the write's answer, while WAIT's is awaited
        bool holding = false;
    };

    static constexpr std::uint32_t no_index = UINT32_MAX;
    /// A free entry of the table for a request of `sink`, reset; no_index (and its failure
    /// scheduled) when a million are in use.
    auto take_index(reply_sink* sink, std::uint32_t tag) -> std::uint32_t;
    /// A direct request whose outcome is not a plain answer: a redirection to follow (the
    /// request moves into the table), a look again to ask for, a failure to count.
    void on_unusual(const watched_request& w, const reply_event& event) noexcept override;
    /// A disown of a direct request that was redirected since.
    auto disown_redirected(std::uint32_t origin, const reply_sink* sink) noexcept -> bool;
    void on_reply(std::uint32_t tag, const reply_event& event) noexcept override;
    void answer(std::uint32_t index, std::uint32_t tag, const reply_event& event);
    /// Sends request `index` to `c` (after ASKING when `asking`), WAIT after it when replicated.
    void place(std::uint32_t index, node_connection& c, bool asking);
    /// What connection_for() said of request `index`: placed on `c`, parked until a route is
    /// known, or failed on a later turn with `why`.
    void place_or_park(std::uint32_t index, node_connection* c, bool park, std::string why);
    void forward(std::uint32_t index, const reply_event& event);
    void fail_later(std::uint32_t index, std::string why);
    void schedule_failures();
    void release_if_finished(std::uint32_t index);

    member_parts parts_;
    std::string name_;
    node_name report_name_;
    int wait_replicas_;
    std::string wait_command_;  // WAIT <n> <timeout ms>, encoded once
    timer_queue& timers_;
    route_ids routes_;  // before the connections' owners (the subclasses) are destroyed
    std::vector<request> requests_;
    std::size_t redirected_ = 0;  // live requests with an origin
    bool stopped_ = false;        // stop_all() ran: closing, nothing is followed
    std::vector<std::uint32_t> free_;
    std::vector<std::uint32_t> parked_;
    std::vector<std::pair<std::uint32_t, std::string>> failing_;   // failed on the next turn
    std::vector<std::pair<reply_sink*, std::uint32_t>> overflow_;  // refused: no index left
    std::optional<timer_queue::key> failing_timer_;
    std::optional<timer_queue::key> look_timer_;
    std::uint64_t look_due_ = 0;  // loop ms
    bool looking_stopped_ = false;
    node_counters metrics_;
    std::string wake_channel_;
    std::function<void(std::string_view)> on_wake_;
    connection_counters* client_counters_;
    connection_counters own_counters_;
};

}  // namespace redlock::detail
