// Every member of redlock::guard (client.hpp): a lock released when the guard
// goes, in the background, or now with release().

#include "client/client_calls.hpp"
#include "client/client_core.hpp"
#include "operations/lock_state.hpp"
#include "redlock/client.hpp"

#include <utility>

namespace redlock {

using detail::deadlock_error;
using detail::wait_for;

guard::guard(client& owner, lock held) : core_{owner.core_}, lock_{std::move(held)} {}

guard::guard(guard&& other) noexcept
    : core_{std::move(other.core_)}, lock_{std::exchange(other.lock_, lock{})} {}

auto guard::operator=(guard&& other) noexcept -> guard& {
    if (this != &other) {
        release_in_background();
        core_ = std::move(other.core_);
        lock_ = std::exchange(other.lock_, lock{});
    }
    return *this;
}

guard::~guard() {
    release_in_background();
}

void guard::release_in_background() noexcept {
    if (!core_ || lock_.empty()) return;
    try {
        core_->release(detail::lock_state::of(lock_), nullptr);
    } catch (...) {
        // Out of memory while queueing: the key expires by its TTL instead.
    }
    lock_ = lock{};
    core_.reset();
}

auto guard::release() -> result<release_report> {
    if (!core_ || lock_.empty()) {
        return failure{
            error{make_error_code(errc::invalid_argument), "the guard holds no lock", {}, 0}};
    }
    if (core_->on_loop_thread()) return failure{deadlock_error("guard::release")};
    auto core = std::move(core_);
    const lock held = std::exchange(lock_, lock{});
    return wait_for<release_report>([&](client::release_callback cb) {
        core->release(detail::lock_state::of(held), std::move(cb));
    });
}

}  // namespace redlock
