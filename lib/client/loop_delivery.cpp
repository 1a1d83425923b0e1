#include "client/loop_delivery.hpp"

#include "transport/callback_guard.hpp"
#include "transport/timer_queue.hpp"

#include <chrono>
#include <utility>

namespace redlock::detail {
namespace {

/// A completion on a timer of its own, for a loop the client no longer has a
/// handle on. It owns itself: it outlives the client, and deletes itself once
/// its timer's handle is closed, so the caller's loop can still close.
class late_delivery {
public:
    static void start(uv_loop_t* loop, std::function<void()> completion) {
        auto* self = new late_delivery{loop, std::move(completion)};  // NOLINT: owns itself
        self->timers_.schedule(std::chrono::milliseconds{0}, [self] {
            call_guarded(self->completion_);  // a throw must not skip the close
            self->timers_.close([self] { delete self; });
        });
    }

private:
    late_delivery(uv_loop_t* loop, std::function<void()> completion)
        : timers_{loop}, completion_{std::move(completion)} {}

    timer_queue timers_;
    std::function<void()> completion_;
};

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
    if (!loop.owned()) {
        late_delivery::start(loop.loop(), std::move(completion));
        return;
    }
    // An owned loop that has ended: no loop thread is left.
    run_detached(std::move(completion));
}

}  // namespace redlock::detail
