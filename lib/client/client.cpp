// Every member of redlock::client and redlock::guard: thin handles on a
// shared client_core. The blocking forms run their _async form and wait for
// its callback. What status and check parse is in diagnostics.cpp.

#include "redlock/client.hpp"
#include "sansio/hash_slot.hpp"

#include "client/client_core.hpp"
#include "client/client_listing.hpp"
#include "client/diagnostics_parse.hpp"
#include "client/probe_then.hpp"
#include "operations/acquire_checks.hpp"
#include "operations/lock_state.hpp"
#include "redlock/coro.hpp"
#include "sansio/timing.hpp"
#include "transport/callback_guard.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace redlock {
namespace {

auto deadlock_error(const char* what) -> error {
    return error{make_error_code(errc::would_deadlock),
                 std::string{"blocking "} + what +
                     " called on the client's loop thread; use the _async form there",
                 {},
                 0};
}

/// status and check have always said "blocking call" rather than their name;
/// kept word for word so that moving them from diagnostics.cpp changed no message.
auto unnamed_deadlock_error() -> error {
    return error{make_error_code(errc::would_deadlock),
                 "blocking call on the client's loop thread; use the _async form there",
                 {},
                 0};
}

auto moved_from_error() -> error {
    return error{make_error_code(errc::client_stopped), "the client was moved from", {}, 0};
}

/// A moved-from client has no loop: its callbacks run on a thread of their own,
/// never inside the call, as the contract says of every callback.
template <class Callback>
void refuse_moved_from(Callback done) {
    if (!done) return;
    detail::run_detached([done = std::move(done)] { done(failure{moved_from_error()}); });
}

/// Tickets of a moved-from client: never 0, never one of a live client's (those
/// count up from 1), and cancel() ignores them.
auto orphan_ticket() noexcept -> client::acquire_ticket {
    static std::atomic<client::acquire_ticket> next{client::acquire_ticket{1} << 63};
    return next.fetch_add(1, std::memory_order_relaxed);
}

/// Runs `start(callback)` and waits for the callback's value. Whatever start
/// returns (a stop_callback, say) lives until the value has arrived.
template <class T, class Start>
auto wait_for(Start&& start) -> result<T> {
    std::promise<result<T>> promise;
    auto future = promise.get_future();
    std::function<void(result<T>)> deliver = [&promise](result<T> r) {
        promise.set_value(std::move(r));
    };
    if constexpr (std::is_void_v<std::invoke_result_t<Start, std::function<void(result<T>)>>>) {
        start(std::move(deliver));
        return future.get();
    } else {
        [[maybe_unused]] auto keep = start(std::move(deliver));
        return future.get();
    }
}

}  // namespace

client::client(std::shared_ptr<detail::client_core> core) noexcept : core_{std::move(core)} {}
client::client(client&&) noexcept = default;

auto client::operator=(client&& other) noexcept -> client& {
    if (this != &other) {
        if (core_) core_->shutdown();
        core_ = std::move(other.core_);
    }
    return *this;
}

client::~client() {
    if (core_) core_->shutdown();
}

auto client::create(client_config config) -> result<client> {
    auto core = detail::client_core::create(std::move(config), nullptr);
    if (!core) return failure{std::move(core).error()};
    return client{std::move(*core)};
}

auto client::create(client_config config, uv_loop_s* loop) -> result<client> {
    if (loop == nullptr) {
        return failure{error{make_error_code(errc::invalid_argument), "the loop is null", {}, 0}};
    }
    auto core = detail::client_core::create(std::move(config), loop);
    if (!core) return failure{std::move(core).error()};
    return client{std::move(*core)};
}

auto client::acquire_async(std::string resource, lock_options options, acquire_callback done)
    -> acquire_ticket {
    std::vector<std::string> resources;
    resources.push_back(std::move(resource));
    return acquire_all_async(std::move(resources), std::move(options), std::move(done));
}

auto client::acquire_all_async(std::vector<std::string> resources, lock_options options,
                               acquire_callback done) -> acquire_ticket {
    if (!core_) {
        refuse_moved_from(std::move(done));
        return orphan_ticket();
    }
    return core_->acquire(std::move(resources), std::move(options), std::move(done));
}

auto client::acquire(std::string resource, lock_options options, std::stop_token stop)
    -> result<lock> {
    std::vector<std::string> resources;
    resources.push_back(std::move(resource));
    return acquire_all(std::move(resources), std::move(options), std::move(stop));
}

auto client::acquire_all(std::vector<std::string> resources, lock_options options,
                         std::stop_token stop) -> result<lock> {
    if (!core_) return failure{moved_from_error()};
    if (core_->on_loop_thread()) return failure{deadlock_error("acquire")};
    return wait_for<lock>([&](acquire_callback cb) {
        const acquire_ticket ticket =
            core_->acquire(std::move(resources), std::move(options), std::move(cb));
        // Lives until wait_for returns, i.e. until the callback has run.
        return std::stop_callback{stop, [core = core_, ticket] { core->cancel(ticket); }};
    });
}

void client::cancel(acquire_ticket ticket) {
    if (core_ && ticket != 0) core_->cancel(ticket);
}

void client::extend_async(const lock& held, std::chrono::milliseconds ttl, extend_callback done) {
    if (!core_) {
        refuse_moved_from(std::move(done));
        return;
    }
    core_->extend(detail::lock_state::of(held), ttl, std::move(done));
}

auto client::extend(const lock& held, std::chrono::milliseconds ttl)
    -> result<std::chrono::milliseconds> {
    if (!core_) return failure{moved_from_error()};
    if (core_->on_loop_thread()) return failure{deadlock_error("extend")};
    return wait_for<std::chrono::milliseconds>([&](extend_callback cb) {
        core_->extend(detail::lock_state::of(held), ttl, std::move(cb));
    });
}

void client::release_async(const lock& held, release_callback done) {
    if (!core_) {
        refuse_moved_from(std::move(done));
        return;
    }
    core_->release(detail::lock_state::of(held), std::move(done));
}

auto client::release(const lock& held) -> result<release_report> {
    if (!core_) return failure{moved_from_error()};
    if (core_->on_loop_thread()) return failure{deadlock_error("release")};
    return wait_for<release_report>(
        [&](release_callback cb) { core_->release(detail::lock_state::of(held), std::move(cb)); });
}

auto client::adopt(std::string resource, std::string value) const -> lock {
    return adopt(std::move(resource), std::move(value), lock_kind::exclusive);
}

auto client::adopt(std::string resource, std::string value, lock_kind kind, int permits) const
    -> lock {
    auto state = std::make_shared<detail::lock_state>();
    state->resources.push_back(std::move(resource));
    state->value = std::move(value);
    state->ttl = core_ ? core_->config().lock.ttl : std::chrono::milliseconds{0};
    state->adopted = true;
    state->kind = kind;
    if (kind == lock_kind::permit) state->permits = std::clamp(permits, 1, max_permits);
    return detail::lock_state::handle(std::move(state));
}

void client::status_async(std::string resource, std::function<void(result<lock_status>)> done) {
    if (!core_) {
        refuse_moved_from(std::move(done));
        return;
    }
    std::string invalid =
        resource.empty() ? "the resource name is empty" : detail::resource_problem(resource);
    auto commands = invalid.empty() ? detail::status_commands(core_->config(), resource)
                                    : std::vector<std::vector<std::string>>{};
    const std::size_t quorum = detail::quorum(core_->node_count());
    const std::uint16_t slot = detail::resource_slot(resource);
    probe_then(
        *core_, std::move(invalid), std::move(commands), std::move(done),
        [resource = std::move(resource), quorum](auto probes) mutable {
            return detail::parse_status(std::move(resource), quorum, std::move(probes));
        },
        slot);
}

auto client::status(std::string resource) -> result<lock_status> {
    if (!core_) return failure{moved_from_error()};
    if (core_->on_loop_thread()) return failure{unnamed_deadlock_error()};
    return wait_for<lock_status>([&](std::function<void(result<lock_status>)> cb) {
        status_async(std::move(resource), std::move(cb));
    });
}

void client::status_async(std::string resource, int permits,
                          std::function<void(result<semaphore_status>)> done) {
    if (!core_) {
        refuse_moved_from(std::move(done));
        return;
    }
    std::string invalid =
        resource.empty() ? "the resource name is empty" : detail::resource_problem(resource);
    if (permits < 1 || permits > max_permits) {
        invalid = "permits must be between 1 and " + std::to_string(max_permits) + ", not " +
                  std::to_string(permits);
    }
    auto commands = invalid.empty() ? detail::semaphore_commands(core_->config(), resource, permits)
                                    : std::vector<std::vector<std::string>>{};
    const std::size_t quorum = detail::quorum(core_->node_count());
    const std::uint16_t slot = detail::resource_slot(resource);
    probe_then(
        *core_, std::move(invalid), std::move(commands), std::move(done),
        [resource = std::move(resource), permits, quorum](auto probes) mutable {
            return detail::parse_semaphore(std::move(resource), permits, quorum, std::move(probes));
        },
        slot);
}

auto client::status(std::string resource, int permits) -> result<semaphore_status> {
    if (!core_) return failure{moved_from_error()};
    if (core_->on_loop_thread()) return failure{unnamed_deadlock_error()};
    return wait_for<semaphore_status>([&](std::function<void(result<semaphore_status>)> cb) {
        status_async(std::move(resource), permits, std::move(cb));
    });
}

void client::check_async(std::function<void(result<cluster_health>)> done) {
    if (!core_) {
        refuse_moved_from(std::move(done));
        return;
    }
    const std::size_t quorum = detail::quorum(core_->node_count());
    core_->probe(
        detail::health_commands(),
        [quorum, done = std::move(done)](result<std::vector<detail::node_probe>> probes) mutable {
            if (!probes) {
                done(failure{std::move(probes).error()});
                return;
            }
            done(detail::parse_health(quorum, std::move(*probes)));
        });
}

auto client::check() -> result<cluster_health> {
    if (!core_) return failure{moved_from_error()};
    if (core_->on_loop_thread()) return failure{unnamed_deadlock_error()};
    return wait_for<cluster_health>(
        [&](std::function<void(result<cluster_health>)> cb) { check_async(std::move(cb)); });
}

void client::list_async(list_options options, std::function<void(result<lock_listing>)> done) {
    if (!core_) return refuse_moved_from(std::move(done));
    detail::start_listing(*core_, std::move(options), std::move(done));
}

auto client::list(list_options options) -> result<lock_listing> {
    if (!core_) return failure{moved_from_error()};
    if (core_->on_loop_thread()) return failure{deadlock_error("list")};
    return wait_for<lock_listing>([&](std::function<void(result<lock_listing>)> cb) {
        list_async(std::move(options), std::move(cb));
    });
}

auto client::stats() const -> client_stats {
    return core_ ? core_->stats() : client_stats{};
}

auto client::metrics() const -> metrics_snapshot {
    return core_ ? core_->metrics() : metrics_snapshot{};
}

auto client::config() const -> const client_config& {
    static const client_config none{};  // a moved-from client's: no nodes
    return core_ ? core_->config() : none;
}

auto client::node_count() const noexcept -> std::size_t {
    return core_ ? core_->node_count() : 0;
}

void client::shutdown() {
    if (core_) core_->shutdown();
}

// ---- guard --------------------------------------------------------------------------------

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

// The coroutine factories (redlock/coro.hpp has the awaiters; client.hpp only names them,
// so that it needs no <coroutine>).

auto client::async_acquire(std::string resource, lock_options options, std::stop_token stop)
    -> acquire_awaiter {
    std::vector<std::string> resources;
    resources.push_back(std::move(resource));
    return acquire_awaiter{*this, std::move(resources), std::move(options), std::move(stop)};
}

auto client::async_acquire_all(std::vector<std::string> resources, lock_options options,
                               std::stop_token stop) -> acquire_awaiter {
    return acquire_awaiter{*this, std::move(resources), std::move(options), std::move(stop)};
}

auto client::async_extend(const lock& held, std::chrono::milliseconds ttl) -> extend_awaiter {
    return extend_awaiter{*this, held, ttl};
}

auto client::async_release(const lock& held) -> release_awaiter {
    return release_awaiter{*this, held};
}

}  // namespace redlock
