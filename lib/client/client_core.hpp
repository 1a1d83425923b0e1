#pragma once

#include "client/acquisition_request.hpp"
#include "client/loop_delivery.hpp"
#include "client/operation_registry.hpp"
#include "client/reentry_registry.hpp"
#include "operations/op_context.hpp"
#include "operations/operation.hpp"
#include "operations/probe_op.hpp"
#include "operations/waiter_registry.hpp"
#include "operations/watchdog.hpp"
#include "redlock/client.hpp"
#include "sansio/admission_queue.hpp"
#include "sansio/cluster_shape.hpp"
#include "transport/event_loop.hpp"
#include "transport/member_factory.hpp"
#include "transport/node_connection.hpp"
#include "transport/os_random.hpp"
#include "transport/quorum_member.hpp"
#include "transport/timer_queue.hpp"
#include "transport/write_batcher.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

struct lock_state;
class election_observer;

/// Everything behind a redlock::client: the loop, the node connections, the
/// operations in flight, and the shutdown order.
class client_core final : public std::enable_shared_from_this<client_core>,
                          private operation_owner {
public:
    /// Validates, builds and starts. `external` null: own a loop thread.
    [[nodiscard]] static auto create(client_config config, uv_loop_t* external)
        -> result<std::shared_ptr<client_core>>;

    /// `tls`: built from config.tls by create() (null without TLS).
    client_core(client_config config, uv_loop_t* external,
                std::shared_ptr<const tls_context> tls = {});
    client_core(const client_core&) = delete;
    auto operator=(const client_core&) -> client_core& = delete;
    ~client_core();

    // ---- the public operations; any thread (owned loop) -------------------------------
    /// `proclamation`: a campaign's proposal, which its fencing confirm stores.
    auto acquire(std::vector<std::string> resources, lock_options options,
                 client::acquire_callback done,
                 std::shared_ptr<const std::string> proclamation = {}) -> client::acquire_ticket;
    void release(std::shared_ptr<lock_state> state, client::release_callback done);
    void extend(std::shared_ptr<lock_state> state, std::chrono::milliseconds ttl,
                client::extend_callback done) override;
    void cancel(client::acquire_ticket ticket);
    /// Sends `commands` to every node and reports what each answered.
    /// `slot`: where the commands' keys hash (a cluster member sends them there).
    void probe(std::vector<std::vector<std::string>> commands,
               std::function<void(result<std::vector<node_probe>>)> done, std::uint16_t slot = 0);
    void shutdown();
    [[nodiscard]] auto on_loop_thread() const noexcept -> bool { return loop_.on_loop_thread(); }
    [[nodiscard]] auto stats() const -> client_stats;
    [[nodiscard]] auto metrics() const -> metrics_snapshot;

    // ---- operation_owner: what operations call back, on the loop thread
    // ---------------------------
    void retire(operation* op) noexcept override;
    void acquisition_finished() override;
    void watch(std::shared_ptr<lock_state> state) override { watchdog_.watch(std::move(state)); }
    void release_lost(std::shared_ptr<lock_state> state) override;
    void name_holder(std::string resource, error failed, client::acquire_callback done,
                     bool counted) override;
    void explain_loss(const lock_state& state, error why, std::function<void(error)> then) override;
    void start(std::unique_ptr<operation> op) override { ops_.start(std::move(op)); }

    [[nodiscard]] auto config() const noexcept -> const client_config& { return config_; }
    [[nodiscard]] auto node_count() const noexcept -> std::size_t { return nodes_.size(); }

    // ---- operations the client layer adds (client_listing.cpp) ------------------------
    /// Runs `make` on the loop thread (at once if called there) and starts the operation it
    /// returns; once the client takes no more operations, runs `refused` instead, on a later
    /// turn. One of the two runs, once.
    void start_operation(std::function<std::unique_ptr<operation>(op_context&)> make,
                         std::function<void()> refused) {
        auto start = [this, make = std::move(make), refused]() mutable {
            if (stopping_) {
                deliver_later(loop_, std::move(refused));
            } else {
                ops_.start(make(ctx_));
            }
        };
        if (!run_on_loop(std::move(start))) deliver_later(loop_, std::move(refused));
    }
    /// Runs `task` with the operations' context on the loop thread (at once if called
    /// there): what lives across operations and is not one (an election's observer) uses
    /// the timers and the waiter registry through it. False, and `task` never runs, once
    /// the client takes no more operations.
    auto with_context(std::function<void(op_context&)> task) -> bool {
        return run_on_loop([this, task = std::move(task)] {
            if (!stopping_) task(ctx_);
        });
    }
    /// The operations' key names and channels (immutable: any thread).
    [[nodiscard]] auto keys() const noexcept -> const key_space& { return ctx_.keys(); }
    /// The election observers alive on this client (election_observer.cpp), by id: kept
    /// here so that none is freed while the waiter registry may still call it. Loop thread.
    [[nodiscard]] auto observers() noexcept
        -> std::unordered_map<std::string, std::shared_ptr<election_observer>>& {
        return observers_;
    }

private:
    /// An acquire call carried from another thread to the loop in one allocation.
    class acquisition_task;

    /// Runs `start(done)` on the loop thread: at once if called there, else
    /// carried over with its callback in one task. `start` returns false when
    /// the client no longer takes the call; `done` then hears stopped_error on
    /// a later turn, as it does when the loop has closed.
    template <typename Callback, typename Start>
    void call_on_loop(Callback done, Start start);
    /// Delivers stopped_error to `done` on a later turn.
    template <typename Callback>
    void refuse_stopped(Callback done);
    /// Runs `task` on the loop thread: now if already there, else posted. False
    /// if the client has stopped (the task did not run and never will).
    auto run_on_loop(std::function<void()> task) -> bool;
    /// On the loop thread: another hold of a reentrant lock, a wait behind its
    /// owner's acquisition or back-pressure, or an acquire_op started. What it
    /// keeps is moved out of `request`.
    void start_acquire(acquisition_request& request);
    /// An acquisition that waited for its owner's acquisition in flight is back.
    void resume(acquisition_request request, bool cancelled);
    /// `counted`: against max_concurrent_acquisitions (admission_ counted it already).
    void launch(acquisition_request& request, bool counted);
    void refuse(client::acquire_callback done, errc why,
                const char* waiting_for = "for its turn to start (max_concurrent_acquisitions)");
    void start_release(std::shared_ptr<lock_state> state, client::release_callback done);
    void begin_shutdown();
    void close_everything();
    void on_handle_closed();
    /// Logs "redlock: warning: <what>" (loop thread), to the logger or stderr.
    void warn(const std::string& what) const { log_warning(config_, "redlock: warning: " + what); }
    /// Node `node` answered a handshake: warns of nodes that are the same server.
    void check_identity(std::size_t node);

    client_config config_;
    std::shared_ptr<const tls_context> tls_;  // shared by every connection, subscribers too
    event_loop loop_;
    random_source rng_;
    connection_counters connection_counters_;
    op_counters counters_;
    timer_queue timers_;
    write_batcher batcher_;  // shared by every connection; declared before them
    std::vector<std::unique_ptr<quorum_member>> nodes_;  // the quorum's members, in config order
    operation_registry ops_;                             // live operations, owned
    admission_queue<acquisition_request> admission_{config_.max_concurrent_acquisitions};
    std::atomic<client::acquire_ticket> next_ticket_{0};
    std::string client_id_;
    waiter_registry waiters_{loop_.loop(), batcher_, config_, rng_, timers_};
    op_context ctx_{{config_, nodes_, timers_, rng_, counters_, waiters_, client_id_, *this}};
    watchdog watchdog_{ctx_};
    reentry_registry reentries_{// lock_options::owner (loop thread)
                                [this](acquisition_request request, bool cancelled) {
                                    resume(std::move(request), cancelled);
                                }};
    shared_server_check same_servers_{config_.member_count()};  // run_ids seen, pairs reported
    bool stopping_ = false;                                     // loop thread: no new operations
    bool closing_ = false;  // loop thread: handles are being closed
    int closes_pending_ = 0;
    std::atomic<bool> shutdown_requested_{false};
    std::shared_ptr<client_core> self_;  // attached loop: alive until every handle closed
    std::unordered_map<std::string, std::shared_ptr<election_observer>> observers_;
};

}  // namespace redlock::detail
