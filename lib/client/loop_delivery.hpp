#pragma once

// How the client hands work to its loop: a task posted with its type kept, so
// that what it carries is at hand if the loop refuses it; and every completion
// the client delivers itself (a refusal, another hold of a reentrant lock) on a
// later turn, never inside the call that asked for it, whatever state the
// client's loop is in by then.

#include "transport/event_loop.hpp"

#include <functional>
#include <memory>

namespace redlock::detail {

/// Posts `task` to `loop`. False once the loop takes no more tasks: `task`
/// still holds it then, as a Task, not a loop_task to cast back.
template <class Task>
auto post_typed(event_loop& loop, std::unique_ptr<Task>& task) -> bool {
    Task* const typed = task.get();
    std::unique_ptr<loop_task> erased = std::move(task);
    if (loop.post(erased)) return true;
    (void)erased.release();  // the same object as `typed`, which takes it back
    task.reset(typed);
    return false;
}

/// Runs `completion` once, later: on the loop thread while the loop takes
/// tasks; on a one-shot timer of its own on an attached loop the client has
/// closed its handles on (the caller's loop lives on); on another thread
/// (run_detached) once an owned loop has ended.
void deliver_later(event_loop& loop, std::function<void()> completion);

}  // namespace redlock::detail
