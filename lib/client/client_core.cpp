#include "client/client_core.hpp"

#include "operations/acquire_op.hpp"
#include "operations/extend_op.hpp"
#include "transport/callback_guard.hpp"
#include "operations/lock_state.hpp"
#include "operations/probe_op.hpp"
#include "operations/release_op.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace redlock::detail {
namespace {

constexpr std::size_t max_nodes = 255;  // a node index must fit in a request tag

auto stopped_error() -> error {
    return error{make_error_code(errc::client_stopped), "the client has been shut down", {}, 0};
}

}  // namespace

auto client_core::create(client_config config, uv_loop_t* external)
    -> result<std::shared_ptr<client_core>> {
    if (auto problem = validate_config(config)) {
        return failure{error{make_error_code(errc::invalid_config), problem->what(), {}, 0}};
    }
    if (config.nodes.size() > max_nodes) {
        return failure{error{make_error_code(errc::invalid_config),
                             "<config>: /nodes: at most 255 nodes are supported",
                             {},
                             0}};
    }
    std::shared_ptr<const tls_context> tls;
    if (config.tls) {
        // Files that exist but hold no certificate (or a key of another
        // certificate) only show here, when OpenSSL reads them.
        auto [context, problem] = tls_context::create(*config.tls);
        if (problem) {
            problem->file = "<config>";
            return failure{error{make_error_code(errc::invalid_config), problem->what(), {}, 0}};
        }
        tls = std::move(context);
    }
    auto core = std::make_shared<client_core>(std::move(config), external, std::move(tls));
    if (core->nodes_.size() % 2 == 0) {
        // Logged on the loop thread, as every log line is (config.hpp): posted
        // now, it runs once the loop does.
        core->loop_.post([raw = core.get()] {
            const std::size_t n = raw->nodes_.size();
            raw->warn(std::to_string(n) + " nodes is an even number: a majority needs " +
                      std::to_string(n / 2 + 1) +
                      ", so one more node would add fault tolerance at no cost");
        });
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
      hooks_{loop_.loop()} {
    nodes_.reserve(config_.nodes.size());
    for (const auto& address : config_.nodes) {
        nodes_.push_back(std::make_unique<node_connection>(loop_.loop(), hooks_, address, config_,
                                                           rng_, connection_counters_, tls_));
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        nodes_[i]->on_identified([this, i] { check_identity(i); });
    }
    for (auto& n : nodes_) n->start();
    client_id_ = rng_.lock_value().substr(0, 16);
    waiters_.set_channel(std::string{ctx_.keys().wake_prefix} + client_id_);
    waiters_.set_tls(tls_);
}

void client_core::check_identity(std::size_t node) {
    const std::string& id = nodes_[node]->run_id();
    if (id.empty()) return;
    for (std::size_t other = 0; other < nodes_.size(); ++other) {
        if (other == node || nodes_[other]->run_id() != id) continue;
        const auto pair = std::minmax(node, other);
        if (!same_server_warned_.insert(pair.first * nodes_.size() + pair.second).second) continue;
        // Validation catches the aliases it can see (config_validate); two names
        // of one server that it cannot (a DNS alias, a Unix socket and a TCP
        // port) show here. Acquisition stays safe (SET NX), but a majority of
        // the configured nodes is not a majority of independent servers.
        warn("nodes " + nodes_[pair.first]->name() + " and " + nodes_[pair.second]->name() +
             " are one server (run_id " + id +
             "): the cluster tolerates fewer failures than its node count suggests");
    }
}

void client_core::warn(const std::string& what) const {
    log_warning(config_, "redlock: warning: " + what);
}

client_core::~client_core() {
    delete_ops();
}

void client_core::delete_ops() noexcept {
    ops_.delete_all();
    operation_gauge_.store(0, std::memory_order_relaxed);
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
        call(client_core& core, Callback done, Start start)
            : core_{core}, done_{std::move(done)}, start_{std::move(start)} {}
        void run(std::unique_ptr<loop_task> /*self*/) override {
            if (!start_(done_)) core_.refuse_stopped(std::move(done_));
        }
        client_core& core_;
        Callback done_;
        Start start_;
    };
    std::unique_ptr<loop_task> task =
        std::make_unique<call>(*this, std::move(done), std::move(start));
    if (!loop_.post(task)) refuse_stopped(std::move(static_cast<call&>(*task).done_));
}

template <typename Callback>
void client_core::refuse_stopped(Callback done) {
    complete_later([done = std::move(done)] {
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

void client_core::complete_later(std::function<void()> completion) {
    if (loop_.post(completion)) return;
    if (!loop_.owned()) {
        // Our handles are closed, but the caller's loop lives on: a one-shot
        // timer of its own delivers on a later turn, never inside the call.
        struct deferred {
            uv_timer_t timer{};
            std::function<void()> fn;
        };
        auto* d = new deferred{{}, std::move(completion)};
        uv_timer_init(loop_.loop(), &d->timer);
        d->timer.data = d;
        uv_timer_start(
            &d->timer,
            [](uv_timer_t* t) {
                auto* self = static_cast<deferred*>(t->data);
                call_guarded(self->fn);
                uv_close(reinterpret_cast<uv_handle_t*>(t),
                         [](uv_handle_t* h) { delete static_cast<deferred*>(h->data); });
            },
            0, 0);
        return;
    }
    // An owned loop that has ended: no loop thread is left, and the completion
    // must still not run inside the call that asked for it.
    run_detached(std::move(completion));
}

void client_core::start_op(std::unique_ptr<operation> op) {
    operation& started = ops_.adopt(std::move(op));
    operation_gauge_.fetch_add(1, std::memory_order_relaxed);
    started.start();
}

void client_core::retire(operation* op) noexcept {
    ops_.destroy(op);
    operation_gauge_.fetch_sub(1, std::memory_order_relaxed);
    if (stopping_ && ops_.empty()) close_everything();
}

auto client_core::acquire(std::vector<std::string> resources, lock_options options,
                          client::acquire_callback done) -> client::acquire_ticket {
    counters_.acquire_calls.fetch_add(1, std::memory_order_relaxed);
    const client::acquire_ticket ticket = next_ticket_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (on_loop_thread() && !stopping_) {
        // From a completion callback: no hop, and nothing to allocate for one.
        start_acquire(ticket, std::move(resources), std::move(options), std::move(done));
        return ticket;
    }
    std::unique_ptr<loop_task> task = std::make_unique<pending_acquire>(
        *this, ticket, std::move(resources), std::move(options), std::move(done));
    if (!loop_.post(task)) refuse_stopped(std::move(static_cast<pending_acquire&>(*task).done));
    return ticket;
}

void pending_acquire::run(std::unique_ptr<loop_task> self) {
    core.admit(std::unique_ptr<pending_acquire>{static_cast<pending_acquire*>(self.release())});
}

void client_core::start_acquire(client::acquire_ticket ticket, std::vector<std::string> resources,
                                lock_options options, client::acquire_callback done) {
    if (reenter(ticket, resources, options, done)) return;
    if (admission_.must_wait(options)) {
        admission_.hold(std::make_unique<pending_acquire>(*this, ticket, std::move(resources),
                                                          std::move(options), std::move(done)));
        return;
    }
    const bool counted = admission_.counted(options);
    launch_acquire(ticket, std::move(resources), std::move(options), std::move(done), counted);
}

void client_core::admit(std::unique_ptr<pending_acquire> pending) {
    if (stopping_) {
        refuse_stopped(std::move(pending->done));
        return;
    }
    if (reenter(pending->ticket, pending->resources, pending->options, pending->done)) return;
    if (admission_.must_wait(pending->options)) {
        admission_.hold(std::move(pending));  // the task itself waits its turn
        return;
    }
    pending_acquire& p = *pending;
    const bool counted = admission_.counted(p.options);
    launch_acquire(p.ticket, std::move(p.resources), std::move(p.options), std::move(p.done),
                   counted);
}

void client_core::launch_acquire(client::acquire_ticket ticket, std::vector<std::string> resources,
                                 lock_options options, client::acquire_callback done,
                                 bool counted) {
    auto op = std::make_unique<acquire_op>(ctx_, std::move(resources), std::move(options),
                                           std::move(done), ticket);
    if (counted) {
        op->count_against_limit();
        admission_.started();
    }
    start_op(std::move(op));
}

void client_core::start_counted(std::unique_ptr<pending_acquire> next) {
    // Already counted as started by the queue.
    auto op =
        std::make_unique<acquire_op>(ctx_, std::move(next->resources), std::move(next->options),
                                     std::move(next->done), next->ticket);
    op->count_against_limit();
    start_op(std::move(op));
}

void client_core::acquisition_finished() {
    admission_.finished();
    if (stopping_) return;
    while (auto next = admission_.next()) start_counted(std::move(next));
}

void client_core::refuse(client::acquire_callback done, errc why, const char* waiting_for) {
    // Delivered on a later turn, like every completion.
    complete_later([done = std::move(done), why, waiting_for]() mutable {
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

void client_core::start_release(std::shared_ptr<lock_state> state, client::release_callback done) {
    watchdog_.forget(state.get());
    start_op(std::make_unique<release_op>(ctx_, std::move(state), std::move(done)));
}

void client_core::cancel(client::acquire_ticket ticket) {
    run_on_loop([this, ticket] {
        if (operation* op = ops_.find(ticket)) {
            op->cancel(errc::cancelled);
            return;
        }
        if (auto held = admission_.take(ticket)) {
            refuse(std::move(held->done), errc::cancelled);
            return;
        }
        (void)reentries_.cancel(ticket);  // waiting for its owner's acquisition in flight
    });
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
                complete_later([d = std::move(d), report = std::move(report)]() mutable {
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
    start_op(std::make_unique<release_op>(ctx_, std::move(state), nullptr));
}

void client_core::extend(std::shared_ptr<lock_state> state, std::chrono::milliseconds ttl,
                         client::extend_callback done) {
    call_on_loop(
        std::move(done), [this, state = std::move(state), ttl](client::extend_callback& d) mutable {
            if (stopping_) return false;
            start_op(std::make_unique<extend_op>(ctx_, std::move(state), ttl, std::move(d)));
            return true;
        });
}

void client_core::probe(std::vector<std::vector<std::string>> commands,
                        std::function<void(result<std::vector<node_probe>>)> done) {
    call_on_loop(std::move(done), [this, commands = std::move(commands)](auto& d) mutable {
        if (stopping_) return false;
        start_op(std::make_unique<probe_op>(
            ctx_, std::move(commands),
            [d = std::move(d)](std::vector<node_probe> probes) { d(std::move(probes)); }));
        return true;
    });
}

auto client_core::stats() const -> client_stats {
    client_stats s;
    s.acquire_calls = counters_.acquire_calls.load(std::memory_order_relaxed);
    s.acquired = counters_.acquired.load(std::memory_order_relaxed);
    s.acquire_failures = counters_.acquire_failures.load(std::memory_order_relaxed);
    s.attempts = counters_.attempts.load(std::memory_order_relaxed);
    s.releases = counters_.releases.load(std::memory_order_relaxed);
    s.extends = counters_.extends.load(std::memory_order_relaxed);
    s.renewals = counters_.renewals.load(std::memory_order_relaxed);
    s.locks_lost = counters_.locks_lost.load(std::memory_order_relaxed);
    s.release_late_deleted = counters_.release_late_deleted.load(std::memory_order_relaxed);
    s.handoffs = counters_.handoffs.load(std::memory_order_relaxed);
    s.release_late_failed = counters_.release_late_failed.load(std::memory_order_relaxed);
    s.requests = connection_counters_.requests.load(std::memory_order_relaxed);
    s.timeouts = connection_counters_.timeouts.load(std::memory_order_relaxed);
    s.writes = connection_counters_.writes.load(std::memory_order_relaxed);
    s.node_restarts = connection_counters_.restarts.load(std::memory_order_relaxed);
    s.waiters = waiters_.waiter_count();
    s.subscriber_connections = waiters_.connection_count();
    s.operations = operation_gauge_.load(std::memory_order_relaxed) + admission_.held_back();
    s.connects = connection_counters_.connects.load(std::memory_order_relaxed);
    s.nodes_connected = connection_counters_.connected.load(std::memory_order_relaxed);
    return s;
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
    for (auto& h : admission_.drain()) refuse(std::move(h->done), errc::client_stopped);
    for (operation* op : ops_.snapshot()) op->cancel(errc::client_stopped);  // may retire ops
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
    hooks_.close([this] { on_handle_closed(); });
    delete_ops();
    loop_.close([this] { on_handle_closed(); });
}

void client_core::on_handle_closed() {
    if (--closes_pending_ > 0) return;
    if (!loop_.owned() && self_) {
        auto last = std::move(self_);  // may destroy *this at the end of this scope
    }
}

}  // namespace redlock::detail
