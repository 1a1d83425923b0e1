#pragma once

// Whether one node's grants count toward a quorum, and why not: the
// quarantines that follow a restart without persistence (node_handshake's
// settle_identity decides those) and a step of the node's clock (clock_watch
// decides those, from the TIME answers of the handshake and of the renewals'
// probes). The connection's thin shell around both: it counts what it sees
// (client_stats, metrics) and logs it. The probes' answers come here: it is
// their reply sink.

#include "redlock/config.hpp"
#include "sansio/clock_watch.hpp"
#include "sansio/node_handshake.hpp"
#include "sansio/reply.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

namespace redlock::detail {

struct connection_counters;
class node_counters;

class node_trust final : public reply_sink {
public:
    using time_point = std::chrono::steady_clock::time_point;

    /// `name`: the node's, for the log lines (the connection's; it outlives this).
    node_trust(const client_config& config, const std::string& name, connection_counters& all,
               node_counters& node) noexcept
        : config_{config}, name_{name}, all_{all}, node_{node} {}
    node_trust(const node_trust&) = delete;
    auto operator=(const node_trust&) -> node_trust& = delete;
    ~node_trust() override = default;

    /// A handshake completed: `r` is what settle_identity decided, `node_us` the
    /// node's TIME (none if it did not answer one), sent at `sent` and the
    /// handshake answered at `received`.
    void after_handshake(const node_handshake::restart& r, std::optional<std::int64_t> node_us,
                         time_point sent, time_point received);

    /// A TIME probe goes out now, with this as its sink: the tag to send it with.
    [[nodiscard]] auto probe_sent(time_point now) -> std::uint32_t;
    /// A probe's outcome: judged as it is read.
    void on_reply(std::uint32_t tag, const reply_event& event) noexcept override;

    /// Until when the node's grants do not count (the epoch when they do).
    [[nodiscard]] auto quarantined_until() const noexcept -> time_point { return until_; }
    /// Why the latest quarantine began, as the end of "node X: ...".
    [[nodiscard]] auto cause() const noexcept -> const std::string& { return cause_; }
    /// The latest clock step seen, if any.
    [[nodiscard]] auto last_step() const noexcept -> const std::optional<clock_step_note>& {
        return last_step_;
    }

private:
    auto probe_answered(std::uint32_t tag, const reply_event& event, time_point now) -> std::string;
    auto judge(const clock_sample& s) -> std::string;
    void warn(const std::string& line) const;
    void quarantine(std::chrono::milliseconds d, time_point from, std::string why);

    const client_config& config_;
    const std::string& name_;
    connection_counters& all_;
    node_counters& node_;
    clock_watch watch_;
    time_point until_{};
    std::string cause_;
    std::optional<clock_step_note> last_step_;
    /// Probes in flight (a node answers in order): their numbers and send instants.
    std::deque<std::pair<std::uint32_t, time_point>> probes_;
    std::uint32_t next_probe_ = 0;
};

}  // namespace redlock::detail
