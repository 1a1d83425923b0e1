#pragma once

#include "detail/event_loop.hpp"
#include "detail/flush_hooks.hpp"
#include "detail/node_connection.hpp"
#include "detail/operation.hpp"
#include "detail/probe_op.hpp"
#include "detail/random.hpp"
#include "detail/timer_queue.hpp"
#include "detail/watchdog.hpp"
#include "redlock/client.hpp"

#include <atomic>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

struct lock_state;

/// Everything behind a redlock::client: the loop, the node connections, the
/// operations in flight, and the shutdown order.
class client_core : public std::enable_shared_from_this<client_core> {
public:
    /// Validates, builds and starts. `external` null: own a loop thread.
    [[nodiscard]] static auto create(client_config config, uv_loop_t* external)
        -> result<std::shared_ptr<client_core>>;

    client_core(client_config config, uv_loop_t* external);
    client_core(const client_core&) = delete;
    auto operator=(const client_core&) -> client_core& = delete;
    ~client_core();

    // ---- the public operations; any thread (owned loop) -------------------------------
    auto acquire(std::vector<std::string> resources, lock_options options,
                 client::acquire_callback done) -> client::acquire_ticket;
    void release(std::shared_ptr<lock_state> state, client::release_callback done);
    void extend(std::shared_ptr<lock_state> state, std::chrono::milliseconds ttl,
                client::extend_callback done);
    void cancel(client::acquire_ticket ticket);
    /// Sends `commands` to every node and reports what each answered.
    void probe(std::vector<std::vector<std::string>> commands,
               std::function<void(result<std::vector<node_probe>>)> done);
    void shutdown();
    [[nodiscard]] auto on_loop_thread() const noexcept -> bool { return loop_.on_loop_thread(); }
    [[nodiscard]] auto stats() const -> client_stats;

    // ---- for operations, on the loop thread ---------------------------------------------
    [[nodiscard]] auto config() const noexcept -> const client_config& { return config_; }
    [[nodiscard]] auto node_count() const noexcept -> std::size_t { return nodes_.size(); }
    [[nodiscard]] auto node(std::size_t i) noexcept -> node_connection& { return *nodes_[i]; }
    [[nodiscard]] auto rng() noexcept -> random_source& { return rng_; }
    [[nodiscard]] auto timers() noexcept -> timer_queue& { return timers_; }
    [[nodiscard]] auto stopping() const noexcept -> bool { return stopping_; }
    void retire(operation* op) noexcept;
    /// An acquisition counted against max_concurrent_acquisitions has delivered
    /// its result: the next one held back may start.
    void acquisition_finished();
    /// This client's random id: names its waiters and its wake-up channel.
    [[nodiscard]] auto client_id() const noexcept -> const std::string& { return client_id_; }
    /// queue_prefix + "wake:": the prefix of every client's notification channel.
    [[nodiscard]] auto wake_prefix() const noexcept -> const std::string& { return wake_prefix_; }
    /// A waiting acquisition, to be woken by a release notification. Opens the
    /// subscriber connections while anyone waits.
    void add_waiter(const std::string& id, operation* op);
    void remove_waiter(const std::string& id);
    [[nodiscard]] auto waiter_count() const noexcept -> std::size_t { return waiters_.size(); }
    /// Every node's subscriber connection has confirmed its SUBSCRIBE: a release
    /// notification can reach this client. Until then waiters sleep briefly.
    [[nodiscard]] auto subscribed() const noexcept -> bool {
        if (subscribers_.empty()) return false;
        for (const auto& s : subscribers_) {
            if (!s->subscribed()) return false;
        }
        return true;
    }

    /// Starts auto-renewal of a lock just acquired.
    void watch(std::shared_ptr<lock_state> state) { watchdog_.watch(std::move(state)); }

    struct counters {
        std::atomic<std::uint64_t> acquire_calls{0};
        std::atomic<std::uint64_t> acquired{0};
        std::atomic<std::uint64_t> acquire_failures{0};
        std::atomic<std::uint64_t> attempts{0};
        std::atomic<std::uint64_t> releases{0};
        std::atomic<std::uint64_t> extends{0};
        std::atomic<std::uint64_t> renewals{0};
        std::atomic<std::uint64_t> locks_lost{0};
        std::atomic<std::uint64_t> release_late_deleted{0};
        std::atomic<std::uint64_t> release_late_failed{0};
    };
    [[nodiscard]] auto op_counters() noexcept -> counters& { return counters_; }

private:
    /// An acquisition on its way to start: carried from another thread to the
    /// loop in this one allocation, and kept as is while back-pressure holds it.
    struct pending_acquire final : loop_task {
        pending_acquire(client_core& core_, client::acquire_ticket ticket_,
                        std::vector<std::string> resources_, lock_options options_,
                        client::acquire_callback done_)
            : core{core_},
              ticket{ticket_},
              resources{std::move(resources_)},
              options{std::move(options_)},
              done{std::move(done_)} {}
        void run(std::unique_ptr<loop_task> self) override;

        client_core& core;
        client::acquire_ticket ticket;
        std::vector<std::string> resources;
        lock_options options;
        client::acquire_callback done;
    };

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
    /// Delivers a completion later on the loop thread, never inside the caller.
    void complete_later(std::function<void()> completion);
    void start_op(std::unique_ptr<operation> op);
    /// On the loop thread: starts an acquisition, or holds it back.
    void start_acquire(client::acquire_ticket ticket, std::vector<std::string> resources,
                       lock_options options, client::acquire_callback done);
    void admit(std::unique_ptr<pending_acquire> pending);
    void count_held_back() noexcept;  // for stats(), read from any thread
    /// Counted against max_concurrent_acquisitions.
    [[nodiscard]] auto limited(const lock_options& options) const noexcept -> bool;
    /// Must wait for its turn to start (max_concurrent_acquisitions).
    [[nodiscard]] auto held_back(const lock_options& options) const noexcept -> bool;
    void start_release(std::shared_ptr<lock_state> state, client::release_callback done);
    void delete_ops() noexcept;
    void launch_acquire(client::acquire_ticket ticket, std::vector<std::string> resources,
                        lock_options options, client::acquire_callback done, bool limited);
    void refuse(client::acquire_callback done, errc why);
    void begin_shutdown();
    void close_everything();
    void on_handle_closed();
    void open_subscribers();
    void close_subscribers();
    void on_wake(std::string_view waiter);
    /// Logs "redlock: warning: <what>" (loop thread), to the logger or stderr.
    void warn(const std::string& what) const;
    /// Node `node` answered a handshake: warns if another node reported the same run_id.
    void check_identity(std::size_t node);

    client_config config_;
    event_loop loop_;
    random_source rng_;
    connection_counters connection_counters_;
    connection_counters subscriber_counters_;  // kept apart: stats() describes the lock nodes
    counters counters_;
    timer_queue timers_;
    flush_hooks hooks_;  // shared by every connection; declared before them
    std::vector<std::unique_ptr<node_connection>> nodes_;
    operation* ops_ = nullptr;  // live operations, owned: an intrusive list (operation::next_)
    // Back-pressure (config.max_concurrent_acquisitions): acquisitions waiting
    // for their turn to start, in order, and how many limited ones run.
    std::deque<std::unique_ptr<pending_acquire>> admission_;
    std::size_t limited_running_ = 0;
    std::atomic<client::acquire_ticket> next_ticket_{0};
    watchdog watchdog_{*this};
    std::string client_id_;
    std::string wake_prefix_;
    std::unordered_map<std::string, operation*> waiters_;
    std::vector<std::unique_ptr<node_connection>> subscribers_;  // one per node while anyone waits
    std::list<std::unique_ptr<node_connection>> closing_subscribers_;
    std::optional<timer_queue::key> idle_timer_;
    std::atomic<std::size_t> waiter_gauge_{0};  // for stats(), from any thread
    std::atomic<std::size_t> subscriber_gauge_{0};
    std::atomic<std::size_t> operation_gauge_{0};  // live operations (ops_)
    std::atomic<std::size_t> held_back_gauge_{0};  // admission_.size()
    std::set<std::size_t> same_server_warned_;     // node pairs (i * n + j) already reported
    bool stopping_ = false;                        // loop thread: no new operations
    bool closing_ = false;                         // loop thread: handles are being closed
    int closes_pending_ = 0;
    std::atomic<bool> shutdown_requested_{false};
    std::shared_ptr<client_core> self_;  // attached loop: alive until every handle closed
};

}  // namespace redlock::detail
