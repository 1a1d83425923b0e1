#pragma once

#include "operations/operation.hpp"
#include "operations/waiter_registry.hpp"
#include "redlock/client.hpp"
#include "sansio/release_decision.hpp"
#include "transport/timer_queue.hpp"

#include <chrono>
#include <memory>
#include <optional>

namespace redlock::detail {

struct lock_state;

/// Compare-and-delete on every node (EVALSHA, falling back to EVAL when a node
/// does not have the script cached). Answers once decided (release_decision): a
/// majority deleted, or none can; the other nodes get as long again as the
/// decision took, so a healthy cluster's report names every node. Nodes still
/// to answer are reported pending, and the operation lives on until they do,
/// counting their outcome in client_stats (release_late_deleted / _failed).
/// The I/O shell around release_decision: it sends, times and reports.
class release_op final : public operation {
public:
    release_op(op_context& ctx, std::shared_ptr<lock_state> state, client::release_callback done);

    void start() override;
    void cancel(errc why) override;

private:
    enum kind : std::uint32_t { sha_kind = 0, eval_kind = 1 };

    void handle(std::uint32_t tag, const reply_event& event) override;
    /// The release's only clock read: every entry point that needs the time
    /// (the start, the decision, the report) takes it from here.
    [[nodiscard]] static auto now() noexcept -> std::chrono::steady_clock::time_point;
    void send_release(std::size_t node, bool eval);
    /// The release script, and the hand-off's arguments when there is a successor.
    [[nodiscard]] auto release_command(bool eval) const -> encoded_command;
    /// This client's first waiter for the same exclusive lock, if it can take
    /// it over now (README, "Waiting without spinning": the hand-off).
    [[nodiscard]] auto find_successor() -> std::optional<handoff_offer>;
    void perform(release_decision::step next);
    void finish();

    std::shared_ptr<lock_state> state_;
    client::release_callback done_;
    release_decision decision_;
    std::optional<timer_queue::key> grace_;  // decided: the others' last chance
    std::optional<handoff_offer> successor_;
};

}  // namespace redlock::detail
