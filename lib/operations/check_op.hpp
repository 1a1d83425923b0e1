#pragma once

// client::check's probe (issue 38, items 4 to 6). Every member is asked what probe_op asks
// it, at slot 0; then a cluster member's every other master in the client's slot map, each
// at a slot it serves (so that a master that is down shows as down, not as "not connected"),
// and a Sentinel member's every sentinel (SENTINEL MASTER, SENTINEL REPLICAS). What each
// server answered is collected here and read elsewhere, without I/O (diagnostics_members).
// Read-only: INFO, CONFIG GET, CLUSTER INFO / NODES and SENTINEL questions only.

#include "operations/operation.hpp"
#include "operations/probe_op.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace redlock::detail {

enum class member_kind : std::uint8_t { standalone, cluster, sentinel };

/// Slots first..last of a cluster member, as the client routes them now.
struct slot_run {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    std::string server;  ///< the master serving them ("host:port"); empty: none
    /// How much longer grants for them do not count (a failover, a restart); 0: they count.
    std::chrono::milliseconds quarantined{0};
};

/// What one member's servers answered.
struct member_check {
    member_kind kind = member_kind::standalone;
    /// The member's commands at slot 0; `node` is the member's name.
    node_probe member;
    /// A cluster or Sentinel member's node that served slot 0 ("host:port"), once it answered.
    std::string member_server;
    /// A cluster member's slot map in runs, read once slot 0 answered (empty without a map).
    std::vector<slot_run> map;
    /// A cluster member's other masters, each asked at a slot of its own; `node` is its address.
    std::vector<node_probe> masters;
    /// A Sentinel member's sentinels' answers; `node` is the sentinel's address.
    std::vector<node_probe> sentinels;
    /// A standalone or Sentinel member: how much longer its grants do not count.
    std::chrono::milliseconds quarantined{0};
};

/// What check_op asks, by kind (every list at most 15 commands).
struct check_plan {
    std::vector<member_kind> kinds;         ///< one per member, in configuration order
    std::vector<std::string> master_names;  ///< a Sentinel member's master name, else empty
    std::vector<std::vector<std::string>> master_commands;   ///< a standalone or Sentinel master
    std::vector<std::vector<std::string>> cluster_commands;  ///< each master of a cluster
    /// Each sentinel, with "{name}" standing for the member's master name.
    std::vector<std::vector<std::string>> sentinel_commands;
};

class check_op final : public operation {
public:
    using callback = std::function<void(std::vector<member_check>)>;

    check_op(op_context& ctx, check_plan plan, callback done);

    void start() override;
    void cancel(errc) override {}  // bounded by request_timeout; let it report

private:
    /// The sentinels' answers come here: their connections are not the member's.
    class sentinel_sink final : public reply_sink {
    public:
        explicit sentinel_sink(check_op& op) noexcept : op_{op} {}
        void on_reply(std::uint32_t tag, const reply_event& event) noexcept override;

    private:
        check_op& op_;
    };

    void handle(std::uint32_t tag, const reply_event& event) override;
    void on_sentinel(std::uint32_t tag, const reply_event& event);
    /// Records one answer of `p` (its command `index`), sent at `sent`; true once `p` has
    /// them all.
    [[nodiscard]] auto record(node_probe& p, std::size_t& answers, std::size_t index,
                              std::chrono::steady_clock::time_point sent, const reply_event& event)
        -> bool;
    /// Member `m`'s slot-0 probe is complete: a cluster member's other masters are asked.
    void ask_masters(std::size_t m);
    /// One server of a member has answered everything; the last one delivers.
    void target_done();
    [[nodiscard]] static auto now() noexcept -> std::chrono::steady_clock::time_point;

    check_plan plan_;
    callback done_;
    sentinel_sink sentinel_sink_{*this};
    std::vector<member_check> checks_;
    std::vector<std::size_t> member_answers_;
    std::vector<std::vector<std::size_t>> master_answers_;
    std::vector<std::vector<std::uint16_t>> master_slots_;  // the slot each master was asked at
    std::vector<std::chrono::steady_clock::time_point> masters_sent_;  // per member
    std::vector<std::vector<std::size_t>> sentinel_answers_;
    std::size_t targets_ = 0;  // servers asked and not yet complete
    std::chrono::steady_clock::time_point start_;
};

}  // namespace redlock::detail
