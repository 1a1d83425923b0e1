#include "client/election_observer.hpp"

#include "client/election_commands.hpp"
#include "operations/op_context.hpp"
#include "sansio/delay_policy.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/timing.hpp"
#include "transport/callback_guard.hpp"

#include <atomic>
#include <utility>

namespace redlock {

observation::observation(observation&&) noexcept = default;

auto observation::operator=(observation&& other) noexcept -> observation& {
    if (this != &other) {
        stop();
        observer_ = std::move(other.observer_);
    }
    return *this;
}

observation::~observation() {
    stop();
}

void observation::stop() noexcept {
    if (observer_) observer_->stop();
    observer_.reset();
}

}  // namespace redlock

namespace redlock::detail {
namespace {

/// The same leader, in what an observer is told of: validity aside.
auto same(const std::optional<leader_info>& a, const std::optional<leader_info>& b) -> bool {
    if (!a || !b) return a.has_value() == b.has_value();
    return a->term == b->term && a->value == b->value && a->proclaimed == b->proclaimed &&
           a->holder == b->holder;
}

std::atomic<std::uint64_t> next_observer{0};

}  // namespace

election_observer::election_observer(const std::shared_ptr<client_core>& core, std::string name,
                                     callback cb)
    : core_{core}, name_{std::move(name)}, callback_{std::move(cb)} {}

auto election_observer::begin(const std::shared_ptr<client_core>& core, std::string name,
                              callback cb) -> result<observation> {
    if (std::string problem = election_problem(name); !problem.empty())
        return failure{error{make_error_code(errc::invalid_argument), std::move(problem), {}, 0}};
    auto self = std::make_shared<election_observer>(core, std::move(name), std::move(cb));
    core->with_context([self](op_context& ctx) { self->start(ctx); });
    return observation{self};
}

void election_observer::stop() noexcept {
    {
        const std::lock_guard hold{callback_mutex_};
        callback_ = nullptr;
    }
    const auto core = core_.lock();
    if (!core) return;
    try {
        core->with_context([self = shared_from_this()](op_context& ctx) { self->teardown(ctx); });
    } catch (...) {
        // Out of memory: the entry expires on the nodes, the registry keeps it until the end.
    }
}

void election_observer::start(op_context& ctx) {
    ctx_ = &ctx;
    id_ = ctx.client_id() + ":e" + std::to_string(next_observer.fetch_add(1) + 1);
    if (const auto core = core_.lock()) core->observers()[id_] = shared_from_this();
    ctx.waiters().add(id_, this);
    // Cluster members publish the election's changes on its shard channel, as
    // releases do (none without them).
    ctx.waiters().watch_shard(id_, shard_wake_channel(ctx.keys(), name_), resource_slot(name_));
    read(true);
    arm_refresh();
    if (!ctx.waiters().subscribed()) await_subscribed(250);
}

void election_observer::teardown(op_context& ctx) {
    if (ctx_ == nullptr) return;  // never started, or torn down already
    for (auto* timer : {&deadline_, &refresh_, &subscribe_check_}) {
        if (*timer) ctx.timers().cancel(**timer);
        timer->reset();
    }
    ctx.waiters().remove(id_);
    ctx_ = nullptr;
    const auto core = core_.lock();
    if (!core) return;
    // Best effort: the entry would expire anyway.
    core->probe(
        unwatch_commands(core->config(), name_, id_), [](const result<std::vector<node_probe>>&) {},
        resource_slot(name_));
    core->observers().erase(id_);  // last: may free this
}

void election_observer::read(bool watch) {
    if (ctx_ == nullptr) return;
    if (reading_) {
        again_ = true;  // a message during a read: read once more after it
        return;
    }
    const auto core = core_.lock();
    if (!core) return;
    reading_ = true;
    core->probe(
        leader_commands(core->config(), name_, watch ? std::string_view{id_} : ""),
        [weak = weak_from_this()](const result<std::vector<node_probe>>& probes) {
            if (const auto self = weak.lock()) self->on_read(probes);
        },
        resource_slot(name_));
}

void election_observer::on_read(const result<std::vector<node_probe>>& probes) {
    reading_ = false;
    if (ctx_ == nullptr) return;
    if (!probes) {
        if (!again_) arm_retry();
        if (std::exchange(again_, false)) read();
        return;
    }
    const election_view view = parse_leader(name_, quorum(probes->size()), *probes);
    if (view.answered < view.quorum && !again_) {
        // Nothing learnt: neither a message's news nor a crashed leader's end. Read again
        // later (the timer at the leader's validity may just have been spent on this read).
        arm_retry();
    }
    if (view.answered >= view.quorum || !delivered_) {
        if (!delivered_ || !same(last_, view.leader)) {
            delivered_ = true;
            last_ = view.leader;
            const std::lock_guard hold{callback_mutex_};
            // A copy: the callback may stop the observation, which clears callback_.
            if (const callback cb = callback_) call_guarded([&] { cb(view); });
        }
        if (ctx_ == nullptr) return;  // the callback stopped the observation
        if (view.answered >= view.quorum) {
            failed_reads_ = 0;
            if (deadline_) ctx_->timers().cancel(*deadline_);
            deadline_.reset();
            // A leader that stops renewing is gone from a majority once this has passed.
            if (view.leader) arm_deadline(view.leader->validity + std::chrono::milliseconds{10});
        }
    }
    if (std::exchange(again_, false)) read();
}

void election_observer::arm_deadline(std::chrono::milliseconds in) {
    if (ctx_ == nullptr) return;
    deadline_ = ctx_->timers().schedule(in, [weak = weak_from_this()] {
        if (const auto self = weak.lock()) {
            self->deadline_.reset();
            self->read();
        }
    });
}

void election_observer::arm_retry() {
    if (ctx_ == nullptr) return;
    if (deadline_) ctx_->timers().cancel(*deadline_);
    deadline_.reset();
    // Jittered, so that observers cut off together do not read together.
    arm_deadline(
        std::chrono::milliseconds{reconnect_delay(++failed_reads_, 100, 2000, ctx_->rng().next())});
}

void election_observer::arm_refresh() {
    if (ctx_ == nullptr) return;
    refresh_ = ctx_->timers().schedule(observer_ttl / 3, [weak = weak_from_this()] {
        const auto self = weak.lock();
        if (!self || self->ctx_ == nullptr) return;
        self->refresh_.reset();
        if (const auto core = self->core_.lock())
            core->probe(
                watch_commands(core->config(), self->name_, self->id_),
                [](const result<std::vector<node_probe>>&) {}, resource_slot(self->name_));
        self->arm_refresh();
    });
}

void election_observer::await_subscribed(int checks_left) {
    if (ctx_ == nullptr) return;
    if (ctx_->waiters().subscribed()) {
        read();
        return;
    }
    if (checks_left == 0) return;
    subscribe_check_ = ctx_->timers().schedule(std::chrono::milliseconds{20},
                                               [weak = weak_from_this(), checks_left] {
                                                   if (const auto self = weak.lock()) {
                                                       self->subscribe_check_.reset();
                                                       self->await_subscribed(checks_left - 1);
                                                   }
                                               });
}

}  // namespace redlock::detail
