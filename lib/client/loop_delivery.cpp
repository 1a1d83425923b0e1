#include "client/loop_delivery.hpp"

#include "transport/callback_guard.hpp"
#include "transport/uv_handle.hpp"

#include <utility>

namespace redlock::detail {
namespace {

/// A completion carried to the loop thread, given back if the loop refuses it.
class completion_task final : public loop_task {
public:
    explicit completion_task(std::function<void()> completion) noexcept
        : fn{std::move(completion)} {}
    void run(std::unique_ptr<loop_task> /*self*/) override { fn(); }

    std::function<void()> fn;
};

}  // namespace

void deliver_later(event_loop& loop, std::function<void()> completion) {
    auto task = std::make_unique<completion_task>(std::move(completion));
    if (post_typed(loop, task)) return;
    completion = std::move(task->fn);
    // An attached loop the client closed its handles on lives on: a one-shot timer of
    // its own delivers there (it outlives the client, and the caller's loop can still
    // close). An owned loop that has ended leaves no loop thread: another thread, then
    // (so too if no timer could be had).
    if (!loop.owned() && run_later(loop.loop(), completion)) return;
    run_detached(std::move(completion));
}

}  // namespace redlock::detail
