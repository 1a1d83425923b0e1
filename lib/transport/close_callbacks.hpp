#pragma once

#include <functional>
#include <utility>

namespace redlock::detail {

/// The callbacks of every close() of one handle owner. libuv aborts the
/// process on a second uv_close of a handle, and a shutdown path and a failure
/// path can both close: the first call starts the close, later ones wait for
/// it, and a call after it completed is answered at once.
class close_callbacks {
public:
    /// Records `done`. True for the first call only: the caller then closes.
    auto add(std::function<void()> done) -> bool {
        if (finished_) {
            if (done) done();
            return false;
        }
        if (started_) {
            pending_ = [first = std::move(pending_), second = std::move(done)] {
                if (first) first();
                if (second) second();
            };
            return false;
        }
        started_ = true;
        pending_ = std::move(done);
        return true;
    }
    /// The handles are closed: runs every recorded callback, once. The owner
    /// may be destroyed by one of them, so this is the last thing it does.
    void closed() {
        finished_ = true;
        if (pending_) std::exchange(pending_, nullptr)();
    }
    [[nodiscard]] auto started() const noexcept -> bool { return started_; }

private:
    std::function<void()> pending_;
    bool started_ = false;
    bool finished_ = false;
};

}  // namespace redlock::detail
