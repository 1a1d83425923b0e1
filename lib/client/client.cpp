// Every member of redlock::client (guard's are in guard.cpp): thin handles on a
// shared client_core. The blocking forms run their _async form and wait for
// its callback. What status and check parse is in diagnostics.cpp.

#include "redlock/client.hpp"

#include "client/audit_index.hpp"
#include "client/campaign.hpp"
#include "client/client_calls.hpp"
#include "client/client_core.hpp"
#include "client/client_listing.hpp"
#include "client/client_sessions.hpp"
#include "client/diagnostics_calls.hpp"
#include "client/diagnostics_parse.hpp"
#include "client/election_observer.hpp"
#include "client/leader_read.hpp"
#include "client/operator_commands.hpp"
#include "operations/acquire_checks.hpp"
#include "operations/holder_text.hpp"
#include "operations/lock_state.hpp"
#include "redlock/coro.hpp"
#include "sansio/hash_slot.hpp"
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

using detail::deadlock_error;
using detail::moved_from_error;
using detail::orphan_ticket;
using detail::probe_then;
using detail::refuse_moved_from;
using detail::wait_for;

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
    return detail::blocking<std::chrono::milliseconds>(core_, "extend", [&](auto cb) {
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
    return detail::blocking<release_report>(core_, "release", [&](auto cb) {
        core_->release(detail::lock_state::of(held), std::move(cb));
    });
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
    if (!core_) return refuse_moved_from(std::move(done));
    detail::start_status(*core_, std::move(resource), std::move(done));
}

auto client::status(std::string resource) -> result<lock_status> {
    return detail::blocking<lock_status>(
        core_, nullptr, [&](auto cb) { status_async(std::move(resource), std::move(cb)); });
}

void client::status_async(std::string resource, int permits,
                          std::function<void(result<semaphore_status>)> done) {
    if (!core_) return refuse_moved_from(std::move(done));
    detail::start_semaphore_status(*core_, std::move(resource), permits, std::move(done));
}

auto client::status(std::string resource, int permits) -> result<semaphore_status> {
    return detail::blocking<semaphore_status>(core_, nullptr, [&](auto cb) {
        status_async(std::move(resource), permits, std::move(cb));
    });
}

void client::check_async(std::function<void(result<cluster_health>)> done) {
    if (!core_) return refuse_moved_from(std::move(done));
    detail::start_check(*core_, std::move(done));
}

auto client::check() -> result<cluster_health> {
    return detail::blocking<cluster_health>(core_, nullptr,
                                            [&](auto cb) { check_async(std::move(cb)); });
}

void client::force_release_async(std::string resource, std::string reason,
                                 force_release_options options,
                                 std::function<void(result<break_report>)> done) {
    if (!core_) return refuse_moved_from(std::move(done));
    const std::string breaker = options.breaker.value_or(detail::default_holder());
    const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    // Indexed for the audit of every resource, once it ran somewhere.
    std::function<void(result<break_report>)> indexed =
        [core = core_.get(), resource, wall,
         done = std::move(done)](result<break_report> r) mutable {
            if (!r || r->broken_on == 0) return done(std::move(r));
            detail::index_break(*core, resource, wall.count(), std::move(*r), std::move(done));
        };
    detail::probe_resource(
        *core_, std::move(resource), detail::break_problem(reason, options),
        [&](const std::string& r) {
            return detail::break_commands(core_->config(), r, reason, breaker, options,
                                          wall.count());
        },
        &detail::parse_break, std::move(indexed));
}

auto client::force_release(std::string resource, std::string reason, force_release_options options)
    -> result<break_report> {
    return detail::blocking<break_report>(core_, "force_release", [&](auto cb) {
        force_release_async(std::move(resource), std::move(reason), std::move(options),
                            std::move(cb));
    });
}

void client::audit_async(std::string resource, std::size_t limit,
                         std::function<void(result<audit_log>)> done) {
    if (!core_) return refuse_moved_from(std::move(done));
    if (resource.empty() && limit > 0)
        return detail::audit_everything(*core_, limit, std::move(done));
    detail::probe_resource(
        *core_, std::move(resource), limit == 0 ? "limit must be at least 1" : "",
        [&](const std::string& r) { return detail::audit_commands(core_->config(), r, limit); },
        &detail::parse_audit, std::move(done));
}

auto client::audit(std::string resource, std::size_t limit) -> result<audit_log> {
    return detail::blocking<audit_log>(
        core_, "audit", [&](auto cb) { audit_async(std::move(resource), limit, std::move(cb)); });
}

void client::check_fence_async(std::string resource, std::uint64_t token,
                               std::function<void(result<fence_check>)> done) {
    if (!core_) return refuse_moved_from(std::move(done));
    detail::probe_resource(
        *core_, std::move(resource), "",
        [&](const std::string& r) { return detail::fence_check_commands(core_->config(), r); },
        [token](std::string r, std::size_t quorum, std::vector<detail::node_probe> probes) {
            return detail::parse_fence_check(std::move(r), token, quorum, std::move(probes));
        },
        std::move(done));
}

auto client::check_fence(std::string resource, std::uint64_t token) -> result<fence_check> {
    return detail::blocking<fence_check>(core_, "check_fence", [&](auto cb) {
        check_fence_async(std::move(resource), token, std::move(cb));
    });
}

void client::list_async(list_options options, std::function<void(result<lock_listing>)> done) {
    if (!core_) return refuse_moved_from(std::move(done));
    detail::start_listing(*core_, std::move(options), std::move(done));
}

auto client::list(list_options options) -> result<lock_listing> {
    return detail::blocking<lock_listing>(
        core_, "list", [&](auto cb) { list_async(std::move(options), std::move(cb)); });
}

auto client::campaign_async(std::string name, std::string proposal, campaign_options options,
                            campaign_callback done) -> acquire_ticket {
    if (!core_) return refuse_moved_from(std::move(done)), orphan_ticket();
    return detail::start_campaign(core_, std::move(name), std::move(proposal), std::move(options),
                                  std::move(done));
}

auto client::campaign(std::string name, std::string proposal, campaign_options options,
                      std::stop_token stop) -> result<leadership> {
    return detail::blocking<leadership>(core_, "campaign", [&](campaign_callback cb) {
        const acquire_ticket ticket =
            campaign_async(std::move(name), std::move(proposal), std::move(options), std::move(cb));
        return std::stop_callback{stop, [core = core_, ticket] { core->cancel(ticket); }};
    });
}

void client::leader_async(std::string name, std::function<void(result<election_view>)> done) {
    if (!core_) return refuse_moved_from(std::move(done));
    detail::read_leader(*core_, std::move(name), std::move(done));
}

auto client::leader(std::string name) -> result<election_view> {
    return detail::blocking<election_view>(
        core_, "leader", [&](auto cb) { leader_async(std::move(name), std::move(cb)); });
}

auto client::observe(std::string name, std::function<void(const election_view&)> on_change)
    -> result<observation> {
    if (!core_) return failure{moved_from_error()};
    return detail::election_observer::begin(core_, std::move(name), std::move(on_change));
}

void client::open_wake_connections() {
    if (core_) core_->with_context([](detail::op_context& ctx) { ctx.waiters().open(); });
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

// ---- sessions (client_sessions.cpp) -------------------------------------------------------

auto client::open_session(session_options options) -> result<session> {
    if (!core_) return failure{moved_from_error()};
    return detail::open_session(core_->config(), std::move(options));
}

void client::close_session_async(const session& open, close_callback done) {
    if (!core_) {
        refuse_moved_from(std::move(done));
        return;
    }
    detail::close_session(*core_, open, std::move(done));
}

auto client::close_session(const session& open) -> result<session_close_report> {
    return detail::blocking<session_close_report>(
        core_, "close_session", [&](auto cb) { close_session_async(open, std::move(cb)); });
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

auto client::async_campaign(std::string name, std::string proposal, campaign_options options,
                            std::stop_token stop) -> campaign_awaiter {
    return campaign_awaiter{*this, std::move(name), std::move(proposal), std::move(options),
                            std::move(stop)};
}

}  // namespace redlock
