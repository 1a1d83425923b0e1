#pragma once

#include "sansio/extend_decision.hpp"
#include "sansio/node_outcomes.hpp"
#include "operations/operation.hpp"
#include "sansio/quorum_tally.hpp"
#include "transport/timer_queue.hpp"
#include "redlock/client.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

struct lock_state;

/// One extension (the algorithm: README, "How an acquisition works"): the extend script on every
/// node at once, a majority that confirms before the current validity ends, and a new validity
/// counted from this operation's own start. A failure leaves the old deadline. The I/O shell
/// around extend_decision, which decides the verdict, the repairs and the deadline.
class extend_op final : public operation {
public:
    extend_op(op_context& ctx, std::shared_ptr<lock_state> state, std::chrono::milliseconds ttl,
              client::extend_callback done);

    void start() override;
    void cancel(errc why) override;

private:
    enum kind : std::uint32_t { sha_kind, eval_kind, repair_kind };

    void handle(std::uint32_t tag, const reply_event& event) override;
    [[nodiscard]] auto extend_command(bool eval) const -> encoded_command;
    void send_extend(std::size_t node, bool eval);
    void fail_later(errc code, std::string message);
    void decide(quorum_tally::verdict verdict);
    [[nodiscard]] static auto answer_of(const reply_event& event) -> extend_answer;
    void fail(errc code, std::string why);
    void repair_missing();
    void send_repair(std::size_t node);
    [[nodiscard]] auto describe_nodes() const -> std::string;

    std::shared_ptr<lock_state> state_;
    std::chrono::milliseconds ttl_;
    std::string ttl_text_;
    client::extend_callback done_;
    std::chrono::steady_clock::time_point start_;
    /// The least TTL left that a confirming node reported (before the verdict).
    std::optional<std::chrono::milliseconds> confirmed_left_;
    extend_decision decision_;
    node_outcomes reports_;
};

}  // namespace redlock::detail
