#include "client/client_core.hpp"

#include "client/client_setup.hpp"
#include "client/counter_snapshots.hpp"
#include "client/holder_naming.hpp"
#include "client/loop_delivery.hpp"
#include "client/member_wakeups.hpp"
#include "operations/acquire_op.hpp"
#include "operations/extend_op.hpp"
#include "operations/lock_state.hpp"
#include "operations/probe_op.hpp"
#include "operations/release_op.hpp"
#include "sansio/cluster_shape.hpp"
#include "transport/callback_guard.hpp"

#include <utility>

namespace redlock::detail {
namespace {

auto stopped_error() -> error {
    return error{make_error_code(errc::client_stopped), "the client has been shut down", {}, 0};
}

}  // namespace

auto client_core::create(client_config config, uv_loop_t* external)
    -> result<std::shared_ptr<client_core>> {
    auto tls = checked_setup(config);
    if (!tls) return failure{std::move(tls).error()};
    auto core = std::make_shared<client_core>(std::move(config), external, std::move(*tls));
    if (auto even = even_node_count_warning(core->nodes_.size()); !even.empty()) {
        // Logged on the loop thread, as every log line is (config.hpp): posted
        // now, it runs once the loop does.
        core->loop_.post([raw = core.get(), even = std::move(even)] { raw->warn(even); });
    }
    if (core->loop_.owned()) {
        // If the client is destroyed on its own loop thread, the thread cannot be
        // joined: it then closes the loop and drops the last reference itself.
        core->loop_.run_thread([raw = core.get()] {
            if (raw->self_) {
                raw->loop_.close_loop();
                auto last = std::move(raw->self_);
            }
        });
    }
    return core;
}

client_core::client_core(client_config config, uv_loop_t* external,
                         std::shared_ptr<const tls_context> tls)
    : config_{std::move(config)},
      tls_{std::move(tls)},
      loop_{external},
      timers_{loop_.loop()},
      batcher_{loop_.loop()} {
    nodes_ =
        make_members({loop_.loop(), batcher_, config_, rng_, connection_counters_, timers_, tls_});
    client_id_ = rng_.lock_value().substr(0, 16);
    std::string channel = std::string{ctx_.keys().wake_prefix} + client_id_;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (node_connection* c = nodes_[i]->standalone())
            c->on_identified([this, i] { check_identity(i); });
    }
    wire_wakeups(nodes_, waiters_, channel);
    for (auto& n : nodes_) n->start();
    waiters_.set_channel(std::move(channel));
    waiters_.set_tls(tls_);
}

void client_core::check_identity(std::size_t node) {
    const std::string& run_id = nodes_[node]->standalone()->run_id();
    for (const auto& [a, b] : same_servers_.identified(node, run_id)) {
        warn("nodes " + nodes_[a]->name() + " and " + nodes_[b]->name() +
             " are one server (run_id " + run_id +
             "): the cluster tolerates fewer failures than its node count suggests");
    }
}

client_core::~client_core() {
    ops_.delete_all();  // before the parts they refer to go
}

// ---- entering the loop --------------------------------------------------------------------

template <typename Callback, typename Start>
void client_core::call_on_loop(Callback done, Start start) {
    if (on_loop_thread()) {
        if (stopping_ || !start(done)) refuse_stopped(std::move(done));
        return;
    }
    class call final : public loop_task {
    public:
        call(client_core& core, Callback callback, Start starter)
            : done{std::move(callback)}, core_{core}, start_{std::move(starter)} {}
        void run(std::unique_ptr<loop_task> /*self*/) override {
            if (!start_(done)) core_.refuse_stopped(std::move(done));
        }
        Callback done;

    private:
        client_core& core_;
        Start start_;
    };
    auto task = std::make_unique<call>(*this, std::move(done), std::move(start));
    if (!post_typed(loop_, task)) refuse_stopped(std::move(task->done));
}

template <typename Callback>
void client_core::refuse_stopped(Callback done) {
    deliver_later(loop_, [done = std::move(done)] {
        if (done) done(failure{stopped_error()});
    });
}

auto client_core::run_on_loop(std::function<void()> task) -> bool {
    if (on_loop_thread()) {
        if (stopping_) return false;
        task();
        return true;
    }
    return loop_.post(std::move(task));
}

void client_core::retire(operation* op) noexcept {
    ops_.retire(op);
    if (stopping_ && ops_.empty()) close_everything();
}

// ---- acquisitions -------------------------------------------------------------------------

class client_core::acquisition_task final : public loop_task {
public:
    acquisition_task(client_core& core, acquisition_request carried) noexcept
        : request{std::move(carried)}, core_{core} {}
    void run(std::unique_ptr<loop_task> /*self*/) override { core_.start_acquire(request); }

    acquisition_request request;

private:
    client_core& core_;
};

auto client_core::acquire(std::vector<std::string> resources, lock_options options,
                          client::acquire_callback done,
                          std::shared_ptr<const std::string> proclamation)
    -> client::acquire_ticket {
    counters_.acquire_calls.fetch_add(1, std::memory_order_relaxed);
    const client::acquire_ticket ticket = next_ticket_.fetch_add(1, std::memory_order_relaxed) + 1;
    acquisition_request request{ticket, std::move(resources), std::move(options), std::move(done),
                                std::move(proclamation)};
    if (on_loop_thread() && !stopping_) {
        // From a completion callback: no hop, and nothing to allocate for one.
        start_acquire(request);
        return ticket;
    }
    auto task = std::make_unique<acquisition_task>(*this, std::move(request));
    if (!post_typed(loop_, task)) refuse_stopped(std::move(task->request.done));
    return ticket;
}

void client_core::start_acquire(acquisition_request& request) {
    if (stopping_) {
        refuse_stopped(std::move(request.done));
        return;
    }
    reentry_route route = reentries_.route(request);
    if (route.held) {
        counters_.acquired.fetch_add(1, std::memory_order_relaxed);
        deliver_later(loop_,
                      [done = std::move(request.done), held = std::move(route.held)]() mutable {
                          call_guarded([&] { done(lock_state::handle(std::move(held))); });
                      });
        return;
    }
    if (route.waits) return;
    switch (admission_.arrive(request.ticket, request.options.max_wait.has_value(), request)) {
        case admission::start:
            launch(request, false);
            return;
        case admission::start_counted:
            launch(request, true);
            return;
        case admission::wait:
            return;  // the queue keeps it
    }
}

void client_core::resume(acquisition_request request, bool cancelled) {
    if (cancelled) {
        refuse(std::move(request.done), errc::cancelled,
               "for its owner's acquisition in flight (lock_options::owner)");
        return;
    }
    start_acquire(request);  // stopped meanwhile: refused there
}

void client_core::launch(acquisition_request& request, bool counted) {
    auto op = std::make_unique<acquire_op>(ctx_, std::move(request.resources),
                                           std::move(request.options), std::move(request.done),
                                           request.ticket, std::move(request.proclamation));
    if (counted) op->count_against_limit();
    ops_.start(std::move(op));
}

void client_core::acquisition_finished() {
    admission_.finished();
    if (stopping_) return;
    while (auto next = admission_.next()) launch(*next, true);
}

void client_core::refuse(client::acquire_callback done, errc why, const char* waiting_for) {
    // Delivered on a later turn, like every completion.
    deliver_later(loop_, [done = std::move(done), why, waiting_for]() mutable {
        if (!done) return;
        const char* what =
            why == errc::cancelled ? "the acquisition was cancelled" : "the client was shut down";
        call_guarded([&] {
            done(failure{
                error{make_error_code(why),
                      std::string{"not locked: "} + what + " while it waited " + waiting_for,
                      {},
                      0}});
        });
    });
}

void client_core::cancel(client::acquire_ticket ticket) {
    run_on_loop([this, ticket] {
        if (ops_.cancel(ticket)) return;
        if (auto waiting = admission_.take(ticket)) {
            refuse(std::move(waiting->done), errc::cancelled);
            return;
        }
        (void)reentries_.cancel(ticket);  // waiting for its owner's acquisition in flight
    });
}

// ---- releases, extensions, probes ---------------------------------------------------------

void client_core::start_release(std::shared_ptr<lock_state> state, client::release_callback done) {
    watchdog_.forget(state.get());
    ops_.start(std::make_unique<release_op>(ctx_, std::move(state), std::move(done)));
}

void client_core::release(std::shared_ptr<lock_state> state, client::release_callback done) {
    counters_.releases.fetch_add(1, std::memory_order_relaxed);
    if (state && !state->owner.empty() && !state->released.load(std::memory_order_acquire)) {
        // A reentrant lock goes to the nodes only with its last hold.
        const int left = state->holds.fetch_sub(1, std::memory_order_acq_rel) - 1;
        if (left > 0) {
            release_report report;
            report.quorum = quorum(nodes_.size());
            report.holds_left = left;
            call_on_loop(std::move(done), [this, report = std::move(report)](
                                              client::release_callback& d) mutable {
                deliver_later(loop_, [d = std::move(d), report = std::move(report)]() mutable {
                    call_guarded([&] { d(std::move(report)); });
                });
                return true;
            });
            return;
        }
    }
    if (state) state->released.store(true, std::memory_order_release);
    if (on_loop_thread() && !stopping_) {
        start_release(std::move(state), std::move(done));
        return;
    }
    call_on_loop(std::move(done),
                 [this, state = std::move(state)](client::release_callback& d) mutable {
                     if (stopping_ && closing_) return false;
                     start_release(std::move(state), std::move(d));
                     return true;
                 });
}

void client_core::release_lost(std::shared_ptr<lock_state> state) {
    // No callback: nobody waits for it. The script deletes only where the key
    // still holds this lock's value, so another holder's key is never touched.
    if (stopping_) return;
    ops_.start(std::make_unique<release_op>(ctx_, std::move(state), nullptr));
}

void client_core::extend(std::shared_ptr<lock_state> state, std::chrono::milliseconds ttl,
                         client::extend_callback done) {
    call_on_loop(
        std::move(done), [this, state = std::move(state), ttl](client::extend_callback& d) mutable {
            if (stopping_) return false;
            ops_.start(std::make_unique<extend_op>(ctx_, std::move(state), ttl, std::move(d)));
            return true;
        });
}

void client_core::probe(std::vector<std::vector<std::string>> commands,
                        std::function<void(result<std::vector<node_probe>>)> done,
                        std::uint16_t slot) {
    call_on_loop(std::move(done), [this, slot, commands = std::move(commands)](auto& d) mutable {
        if (stopping_) return false;
        ops_.start(std::make_unique<probe_op>(
            ctx_, std::move(commands),
            [d = std::move(d)](std::vector<node_probe> probes) { d(std::move(probes)); }, slot));
        return true;
    });
}

void client_core::name_holder(std::string resource, error failed, client::acquire_callback done,
                              bool counted) {
    auto then = [this, counted] { counted ? acquisition_finished() : void(); };
    if (!stopping_)
        return ops_.start(
            naming_probe(ctx_, std::move(resource), std::move(failed), std::move(done), then));
    call_guarded([&] { done(failure{std::move(failed)}); });  // no new request once stopping
    then();
}

void client_core::explain_loss(const lock_state& state, error why,
                               std::function<void(error)> then) {
    if (stopping_) return then(std::move(why));
    ops_.start(loss_cause_probe(ctx_, state, std::move(why), std::move(then)));
}

auto client_core::stats() const -> client_stats {
    return read_stats(counters_, connection_counters_, nodes_, waiters_,
                      ops_.size() + admission_.held_back());
}

auto client_core::metrics() const -> metrics_snapshot {
    return read_metrics(counters_, nodes_, waiters_);
}

// ---- shutdown -----------------------------------------------------------------------------
//
// Order: stop taking operations; cancel acquisitions (they release what they
// were granted); let releases finish; once no operation is left, close the
// wake-up handle (draining posted tasks), the timers and every connection.
// With nothing left open, the loop ends by itself.

void client_core::shutdown() {
    if (shutdown_requested_.exchange(true)) {
        if (loop_.owned() && !on_loop_thread()) loop_.join();
        return;
    }
    if (loop_.owned() && on_loop_thread()) {
        // Destroyed from inside one of our own callbacks: finish on this thread.
        self_ = shared_from_this();
        begin_shutdown();
        loop_.detach();
        return;
    }
    if (!loop_.owned()) {
        self_ = shared_from_this();  // until the caller's loop has closed our handles
        begin_shutdown();
        return;
    }
    if (!loop_.post([this] { begin_shutdown(); })) return;
    loop_.join();
}

void client_core::begin_shutdown() {
    if (stopping_) return;
    stopping_ = true;
    watchdog_.forget_all();  // renewals stop with the client; the keys expire by TTL
    for (auto& waiting : admission_.drain()) refuse(std::move(waiting.done), errc::client_stopped);
    ops_.cancel_all(errc::client_stopped);  // may retire some
    if (ops_.empty()) {
        close_everything();
        return;
    }
    // What is left finishes within a request deadline or two. Should anything
    // still be there after that (a bug), shutdown goes on regardless: it must
    // never hang the caller.
    const auto bound = config_.request_timeout * 4 + std::chrono::milliseconds{500};
    timers_.schedule(bound, [this] { close_everything(); });
}

void client_core::close_everything() {
    if (closing_) return;
    closing_ = true;
    // Counted before any close starts: a callback may come before the last is asked.
    closes_pending_ = 3 + static_cast<int>(nodes_.size()) + 1;
    // Closing a connection fails its pending requests at once, so after this no
    // request refers to an operation any more, and none can be left waiting.
    for (auto& n : nodes_) n->close([this] { on_handle_closed(); });
    closes_pending_ += static_cast<int>(waiters_.close([this] { on_handle_closed(); }));
    on_handle_closed();  // the extra one above, held while the registry's were counted
    timers_.close([this] { on_handle_closed(); });
    batcher_.close([this] { on_handle_closed(); });
    ops_.delete_all();
    loop_.close([this] { on_handle_closed(); });
}

void client_core::on_handle_closed() {
    if (--closes_pending_ > 0) return;
    if (!loop_.owned() && self_) {
        auto last = std::move(self_);  // may destroy *this at the end of this scope
    }
}

}  // namespace redlock::detail
