#pragma once

#include "detail/node_outcomes.hpp"
#include "detail/operation.hpp"
#include "detail/quorum_tally.hpp"
#include "detail/timer_queue.hpp"
#include "redlock/client.hpp"

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

struct lock_state;

/// One acquisition (the algorithm: README, "How an acquisition works"): fan out to every node at
/// once, decide as soon as the verdict is known, compute the validity on the monotonic clock,
/// release on every node after a failed attempt, and retry after a random
/// delay while the attempt budget and the wait deadline allow.
///
/// A plain lock is `SET key value NX PX ttl`. A lock over several resources,
/// or one with a fencing token, runs the acquire script instead (all keys or
/// none, and the node's fence counter read either way). Fencing adds a second
/// round on the quorum: raise every node's counter to the token and confirm
/// that a majority still holds our value.
class acquire_op final : public operation {
public:
    acquire_op(client_core& core, std::vector<std::string> resources, lock_options options,
               client::acquire_callback done, client::acquire_ticket ticket);

    void start() override;
    void cancel(errc why) override;
    /// A release notification for this waiter: try again now.
    void wake();
    /// Counted against max_concurrent_acquisitions: tells the core when done.
    void count_against_limit() noexcept { limited_ = true; }
    [[nodiscard]] auto ticket() const noexcept -> client::acquire_ticket override {
        return ticket_;
    }

private:
    enum kind : std::uint32_t {
        set_kind,
        script_sha_kind,
        script_eval_kind,
        confirm_sha_kind,
        confirm_eval_kind,
        release_sha_kind,
        release_eval_kind,
        dequeue_kind,
    };
    enum class phase { granting, confirming, decided };

    void handle(std::uint32_t tag, const reply_event& event) override;
    [[nodiscard]] auto check_arguments() const -> std::string;
    void begin_attempt();
    [[nodiscard]] auto grant_kind(bool eval) const noexcept -> kind;
    [[nodiscard]] auto grant_command(bool eval) const -> encoded_command;
    void send_grant(std::size_t node, bool eval);
    [[nodiscard]] auto fence_key() const -> std::string;
    [[nodiscard]] auto confirm_command(bool eval) const -> encoded_command;
    void send_confirm(std::size_t node, bool eval);
    [[nodiscard]] auto outcome_of(const reply_event& event, bool confirm) const -> node_outcome;
    void on_grant(std::size_t node, const reply_event& event);
    void discount_if_quarantined(std::size_t node);
    void on_confirm(std::size_t node, const reply_event& event);
    void decide_grant(quorum_tally::verdict verdict);
    void decide_confirm(quorum_tally::verdict verdict);
    void conclude(std::chrono::steady_clock::time_point now);
    void fail_attempt(errc reason, std::optional<std::chrono::milliseconds> validity = {});
    void give_up(errc reason, std::optional<std::chrono::milliseconds> validity = {});
    void release_everywhere();
    [[nodiscard]] auto wait_delay(errc reason) const -> std::chrono::milliseconds;
    void leave_queue(bool everywhere);
    [[nodiscard]] auto release_command(bool eval) const -> encoded_command;
    void send_release(std::size_t node, bool eval);
    void finish_success(std::chrono::milliseconds validity,
                        std::chrono::steady_clock::time_point decided_at);
    void finish_failure();
    [[nodiscard]] auto failed_majority(const quorum_tally& tally) const noexcept -> errc;
    [[nodiscard]] auto granted_count() const noexcept -> std::size_t;
    [[nodiscard]] auto describe_failure(errc reason) const -> std::string;

    // Used by waiting acquisitions only (see waiting_).
    struct wait_fields {
        std::string waiter_id;
        std::string liveness_text;
        std::string arrival_text;           // queue score: the same on every node
        std::vector<long long> holder_ttl;  // per node, from the last attempt (-2: no key)
    };

    // Ordered by size, and what only some acquisitions need is behind a pointer:
    // a thousand locks in flight are a thousand of these.
    std::shared_ptr<lock_state> state_;
    client::acquire_callback done_;
    node_outcomes reports_;  // per node, for the current attempt
    quorum_tally tally_{0};
    quorum_tally confirm_tally_{0};
    std::unique_ptr<wait_fields> wait_;
    std::unique_ptr<error> final_error_;
    std::optional<std::chrono::milliseconds> max_wait_;
    std::optional<std::chrono::steady_clock::time_point> wait_deadline_;
    std::chrono::steady_clock::time_point attempt_start_;
    std::chrono::milliseconds min_validity_{1};
    client::acquire_ticket ticket_;
    std::uint64_t max_counter_ = 0;
    std::uint64_t token_ = 0;
    timer_queue::key retry_timer_{};
    // This attempt's grant request on each node (the usual 3, 5 or 7 nodes):
    // what a decided acquisition disowns rather than wait for.
    std::array<std::uint32_t, 8> grant_numbers_{};
    std::size_t releases_pending_ = 0;
    std::optional<errc> cancelled_;
    int max_attempts_ = 1;  // 0: unlimited (a wait deadline bounds it)
    std::uint32_t attempt_ = 0;
    phase phase_ = phase::decided;
    wait_mode wait_mode_ = wait_mode::targeted;
    bool scripted_ = false;  // several resources, or fencing
    bool fencing_ = false;
    bool waiting_ = false;  // queued per node and woken by notifications
    bool woken_ = false;    // woken while an attempt was in flight
    bool queued_ = false;   // some node refused, and so queued us
    bool limited_ = false;  // counted against max_concurrent_acquisitions
};

}  // namespace redlock::detail
