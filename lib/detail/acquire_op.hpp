#pragma once

#include "detail/operation.hpp"
#include "detail/quorum_tally.hpp"
#include "detail/timer_queue.hpp"
#include "redlock/client.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

struct lock_state;

/// One acquisition (design.md §2): fan out SET NX PX to every node at once,
/// decide as soon as the verdict is known, compute the validity on the
/// monotonic clock, release on every node after a failed attempt, and retry
/// after a random delay while the attempt budget and the wait deadline allow.
class acquire_op final : public operation {
public:
    acquire_op(client_core& core, std::string resource, lock_options options,
               client::acquire_callback done);

    void start() override;
    void cancel(errc why) override;

private:
    enum kind : std::uint32_t { set_kind = 0, release_sha_kind = 1, release_eval_kind = 2 };

    void handle(std::uint32_t tag, const reply_event& event) override;
    void begin_attempt();
    auto record(std::size_t node, const reply_event& event) -> node_status;
    [[nodiscard]] auto granted_count() const noexcept -> std::size_t;
    void on_set_outcome(std::size_t node, const reply_event& event);
    void decide(quorum_tally::verdict verdict);
    void fail_attempt(errc reason, std::optional<std::chrono::milliseconds> validity = {});
    void give_up(errc reason, std::optional<std::chrono::milliseconds> validity = {});
    void release_everywhere();
    void send_release(std::size_t node, bool eval);
    void finish_success(std::chrono::milliseconds validity,
                        std::chrono::steady_clock::time_point decided_at);
    void finish_failure();
    [[nodiscard]] auto describe_failure(errc reason) const -> std::string;

    std::shared_ptr<lock_state> state_;
    client::acquire_callback done_;
    int max_attempts_ = 1;  // 0: unlimited (a wait deadline bounds it)
    std::optional<std::chrono::steady_clock::time_point> wait_deadline_;
    std::chrono::milliseconds min_validity_{1};

    std::uint32_t attempt_ = 0;
    bool attempt_open_ = false;  // requests of the current attempt still decide something
    std::chrono::steady_clock::time_point attempt_start_;
    quorum_tally tally_{0};
    std::vector<node_report> reports_;
    std::size_t releases_pending_ = 0;
    std::optional<error> final_error_;
    std::optional<errc> cancelled_;
    timer_queue::key retry_timer_{};
};

}  // namespace redlock::detail
