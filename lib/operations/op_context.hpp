#pragma once

// What a client lends its operations: the configuration and the key prefixes
// it sets, the nodes (as node_ports), the timers, the random source, the
// counters and the waiter registry — and nothing else of the client.
// Operations (acquire, release, extend, probe) and the watchdog see this,
// never the client_core, nor a node's connection.

#include "operations/lock_commands.hpp"
#include "operations/node_port.hpp"
#include "operations/operation.hpp"
#include "redlock/client.hpp"
#include "transport/metrics_recorder.hpp"
#include "transport/os_random.hpp"
#include "transport/timer_queue.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

class quorum_member;
class operation;
class waiter_registry;
struct lock_state;

/// The client's counters behind client_stats, written on the loop thread and
/// read from any.
struct op_counters {
    std::atomic<std::uint64_t> acquire_calls{0};
    std::atomic<std::uint64_t> acquired{0};
    std::atomic<std::uint64_t> acquire_failures{0};
    std::atomic<std::uint64_t> attempts{0};
    std::atomic<std::uint64_t> releases{0};
    std::atomic<std::uint64_t> extends{0};
    std::atomic<std::uint64_t> renewals{0};
    std::atomic<std::uint64_t> locks_lost{0};
    std::atomic<std::uint64_t> release_late_deleted{0};
    std::atomic<std::uint64_t> handoffs{0};
    std::atomic<std::uint64_t> release_late_failed{0};
    latency_histograms latency;  // client::metrics()
    /// Locks granted and not yet released, lost or dropped. Shared with the
    /// lock states that count in it (lock_state::held_gauge), which may
    /// outlive the client.
    std::shared_ptr<std::atomic<std::int64_t>> locks_held =
        std::make_shared<std::atomic<std::int64_t>>(0);
};

/// The few calls an operation makes back into the client that runs it.
class operation_owner {
public:
    /// `op` has finished and nothing refers to it: delete it.
    virtual void retire(operation* op) noexcept = 0;
    /// An acquisition counted against max_concurrent_acquisitions has
    /// delivered its result: the next one held back may start.
    virtual void acquisition_finished() = 0;
    /// Starts auto-renewal of a lock just acquired.
    virtual void watch(std::shared_ptr<lock_state> state) = 0;
    /// Extends `state` (the watchdog's renewals).
    virtual void extend(std::shared_ptr<lock_state> state, std::chrono::milliseconds ttl,
                        client::extend_callback done) = 0;
    /// Best-effort compare-and-delete of a lock the watchdog gave up on, so
    /// that the nodes still holding it free the resource before its TTL.
    virtual void release_lost(std::shared_ptr<lock_state> state) = 0;
    /// Delivers `failed` (a contended acquisition of `resource`) to `done` once
    /// the nodes have said who holds it, named in its message (holder_naming.hpp);
    /// then, if `counted`, the acquisition counts as finished (acquisition_finished),
    /// so that the acquisitions held back still complete in order.
    virtual void name_holder(std::string resource, error failed, client::acquire_callback done,
                             bool counted) = 0;
    /// Asks the nodes whether `state`'s hold was broken (client::force_release)
    /// and calls `then` with `why`, its message led by "broken by <breaker>:
    /// <reason>" when it was.
    virtual void explain_loss(const lock_state& state, error why,
                              std::function<void(error)> then) = 0;
    /// Starts `op` among the client's live operations (a session's renewal).
    virtual void start(std::unique_ptr<operation> op) = 0;

protected:
    operation_owner() = default;
    operation_owner(const operation_owner&) = default;
    auto operator=(const operation_owner&) -> operation_owner& = default;
    ~operation_owner() = default;
};

class op_context {
public:
    struct parts {
        const client_config& config;
        const std::vector<std::unique_ptr<quorum_member>>& nodes;
        timer_queue& timers;
        random_source& rng;
        op_counters& counters;
        waiter_registry& waiters;
        const std::string& client_id;
        operation_owner& host;
    };
    explicit op_context(parts p)
        : p_{p},
          wake_prefix_{p.config.queue_prefix + "wake:"},
          keys_{p.config.key_prefix,
                p.config.queue_prefix,
                p.config.fence_prefix,
                wake_prefix_,
                !p.config.nodes.empty() || !p.config.sentinel_masters.empty(),
                !p.config.clusters.empty()} {}
    op_context(const op_context&) = delete;  // keys_ views wake_prefix_
    auto operator=(const op_context&) -> op_context& = delete;
    ~op_context() = default;

    [[nodiscard]] auto config() const noexcept -> const client_config& { return p_.config; }
    /// The prefixes of every key and channel this client's commands name.
    [[nodiscard]] auto keys() const noexcept -> const key_space& { return keys_; }
    [[nodiscard]] auto node_count() const noexcept -> std::size_t { return p_.nodes.size(); }
    [[nodiscard]] auto node(std::size_t i) const noexcept -> node_port {
        return node_port{*p_.nodes[i]};
    }
    [[nodiscard]] auto timers() const noexcept -> timer_queue& { return p_.timers; }
    [[nodiscard]] auto rng() const noexcept -> random_source& { return p_.rng; }
    [[nodiscard]] auto counters() const noexcept -> op_counters& { return p_.counters; }
    [[nodiscard]] auto waiters() const noexcept -> waiter_registry& { return p_.waiters; }
    /// This client's random id: names its waiters and its wake-up channel.
    [[nodiscard]] auto client_id() const noexcept -> const std::string& { return p_.client_id; }
    void retire(operation* op) const noexcept { p_.host.retire(op); }
    void acquisition_finished() const { p_.host.acquisition_finished(); }
    void watch(std::shared_ptr<lock_state> state) const { p_.host.watch(std::move(state)); }
    void extend(std::shared_ptr<lock_state> state, std::chrono::milliseconds ttl,
                client::extend_callback done) const {
        p_.host.extend(std::move(state), ttl, std::move(done));
    }
    void release_lost(std::shared_ptr<lock_state> state) const {
        p_.host.release_lost(std::move(state));
    }
    void name_holder(std::string resource, error failed, client::acquire_callback done,
                     bool counted) const {
        p_.host.name_holder(std::move(resource), std::move(failed), std::move(done), counted);
    }
    void explain_loss(const lock_state& state, error why, std::function<void(error)> then) const {
        p_.host.explain_loss(state, std::move(why), std::move(then));
    }
    void start(std::unique_ptr<operation> op) const { p_.host.start(std::move(op)); }

private:
    parts p_;
    std::string wake_prefix_;  // queue_prefix + "wake:"
    key_space keys_;
};

}  // namespace redlock::detail
