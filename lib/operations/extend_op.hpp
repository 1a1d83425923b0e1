#pragma once

#include "operations/operation.hpp"
#include "redlock/client.hpp"
#include "sansio/extend_decision.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace redlock::detail {

struct lock_state;

/// One extension (the algorithm: README, "How an acquisition works"): the extend script on every
/// node at once, a majority that confirms before the current validity ends, and a new validity
/// counted from this operation's own start. A failure leaves the old deadline. The I/O shell
/// around extend_decision, which decides whether to send, what each reply means, the verdict,
/// the repairs and the deadline; this sends what it asks for and reports what it decided.
class extend_op final : public operation {
public:
    extend_op(op_context& ctx, std::shared_ptr<lock_state> state, std::chrono::milliseconds ttl,
              client::extend_callback done);

    void start() override;
    void cancel(errc why) override;

private:
    enum kind : std::uint32_t { sha_kind, eval_kind, repair_kind };

    void handle(std::uint32_t tag, const reply_event& event) override;
    /// The extension's only clock read: every entry point passes it to the decision.
    [[nodiscard]] static auto now() noexcept -> std::chrono::steady_clock::time_point;
    /// The lock as the decision sees it, read from the shared state now.
    [[nodiscard]] auto lock_view() const noexcept -> extend_lock_view;
    void perform(const extend_actions& a);
    [[nodiscard]] auto extend_command(bool eval) const -> encoded_command;
    void send_extend(std::size_t node, bool eval);
    void send_repair(std::size_t node);
    void report_failure(const extend_actions& a);

    std::shared_ptr<lock_state> state_;
    std::string ttl_text_;
    client::extend_callback done_;
    extend_decision decision_;
};

}  // namespace redlock::detail
