#pragma once

#include "histogram.hpp"
#include "redlock/lock.hpp"

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <sys/prctl.h>
#include <thread>
#include <vector>

namespace redlock::bench {

using steady = std::chrono::steady_clock;

[[nodiscard]] inline auto nanos_between(steady::time_point from, steady::time_point to) noexcept
    -> std::uint64_t {
    const auto d = std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
    return d > 0 ? static_cast<std::uint64_t>(d) : 0;
}

/// Contended: one hold of the lock, from the moment acquire() returned to
/// the moment its holder called release().
struct hold_span {
    steady::time_point granted{};
    steady::time_point releasing{};
};

/// What one measured phase produced. Written by the driver's threads, read
/// live by the progress line and exactly once the phase has ended.
struct phase_stats {
    histogram cycle;    ///< start of the acquisition to the release's answer
    histogram acquire;  ///< start of the acquisition to the lock (waiting included)
    std::atomic<std::uint64_t> completed{0};  ///< cycles that held the lock and released it
    std::atomic<std::uint64_t> failed{0};     ///< cycles that ended in an error

    /// Counts an error by kind ("acquire:contended", "raw:nil_reply", ...).
    void error(const std::string& kind) {
        failed.fetch_add(1, std::memory_order_relaxed);
        const std::lock_guard guard{mutex_};
        ++errors_[kind];
    }
    /// An anomaly that does not end the cycle (a release that deleted on
    /// fewer than a majority of nodes).
    void note(const std::string& kind) {
        const std::lock_guard guard{mutex_};
        ++errors_[kind];
    }
    [[nodiscard]] auto errors() const -> std::map<std::string, std::uint64_t> {
        const std::lock_guard guard{mutex_};
        return errors_;
    }
    /// Contended mode: locks held per worker, for fairness.
    void set_workers(std::size_t n) {
        per_worker_.reset(new std::atomic<std::uint64_t>[n]);
        workers_ = n;
        for (std::size_t i = 0; i < n; ++i) per_worker_[i].store(0);
    }
    void worker_locked(std::size_t i) noexcept {
        if (i < workers_) per_worker_[i].fetch_add(1, std::memory_order_relaxed);
    }
    [[nodiscard]] auto per_worker() const -> std::vector<std::uint64_t> {
        std::vector<std::uint64_t> v;
        for (std::size_t i = 0; i < workers_; ++i) v.push_back(per_worker_[i].load());
        return v;
    }

    /// Contended: a hold that ended (for the hand-off latency). About one
    /// per hold time: a mutex is cheap enough.
    void hold(steady::time_point granted, steady::time_point releasing) {
        const std::lock_guard guard{holds_mutex_};
        holds_.push_back({granted, releasing});
    }
    [[nodiscard]] auto holds() const -> std::vector<hold_span> {
        const std::lock_guard guard{holds_mutex_};
        return holds_;
    }

    void reset() {
        for (std::size_t i = 0; i < workers_; ++i) per_worker_[i].store(0);
        {
            const std::lock_guard guard{holds_mutex_};
            holds_.clear();
        }
        cycle.reset();
        acquire.reset();
        completed.store(0);
        failed.store(0);
        const std::lock_guard guard{mutex_};
        errors_.clear();
    }

private:
    mutable std::mutex mutex_;
    std::map<std::string, std::uint64_t> errors_;
    mutable std::mutex holds_mutex_;
    std::vector<hold_span> holds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> per_worker_;
    std::size_t workers_ = 0;
};

/// Bounds one phase: at most `ops` cycles start, none after `deadline`, and
/// the phase is over when every slot (an in-flight cycle chain, or a worker)
/// has seen the gate close and finished its last cycle.
class phase_gate {
public:
    void open(std::uint64_t ops, steady::time_point deadline, int slots) {
        ops_ = ops;
        deadline_ = deadline;
        started_.store(0);
        const std::lock_guard guard{mutex_};
        active_ = slots;
    }

    /// May another cycle start at `now`? Once false, stays false.
    [[nodiscard]] auto admit(steady::time_point now) noexcept -> bool {
        if (now >= deadline_) return false;
        return started_.fetch_add(1, std::memory_order_relaxed) < ops_;
    }

    /// A slot has finished its last cycle.
    void slot_done() {
        const std::lock_guard guard{mutex_};
        if (--active_ == 0) done_.notify_all();
    }

    /// Waits up to `slice` for the phase to end; true when it has.
    [[nodiscard]] auto wait_for(std::chrono::milliseconds slice) -> bool {
        std::unique_lock guard{mutex_};
        return done_.wait_for(guard, slice, [this] { return active_ == 0; });
    }

    [[nodiscard]] auto deadline() const noexcept -> steady::time_point { return deadline_; }

private:
    std::uint64_t ops_ = 0;
    steady::time_point deadline_{};
    std::atomic<std::uint64_t> started_{0};
    std::mutex mutex_;
    std::condition_variable done_;
    int active_ = 0;
};

/// Which lock cycle is measured. Every variant ends with a release.
enum class variant {
    plain,    ///< acquire (SET NX PX), release
    fencing,  ///< acquire with a fencing token (acquire script, confirm script), release
    extend,   ///< acquire, one extend, release
};

[[nodiscard]] inline auto to_string(variant v) -> const char* {
    switch (v) {
        case variant::plain:
            return "plain";
        case variant::fencing:
            return "fencing";
        case variant::extend:
            return "extend";
    }
    return "?";
}

/// What every driver is asked to do in a phase.
struct workload {
    variant kind = variant::plain;
    int concurrency = 1;                    ///< cycles in flight (uncontended)
    bool contended = false;                 ///< workers on one resource instead
    int workers = 4;                        ///< contended: blocking workers
    std::chrono::milliseconds hold{1};      ///< contended: how long each holds the lock
    std::chrono::milliseconds max_wait{0};  ///< contended: 0 = the config's retry policy
    std::optional<wait_mode> wait{};        ///< lock_options::wait (unset: the config's)
    std::chrono::milliseconds ttl{10'000};
    std::string resource_prefix = "bench-";
    /// Lock kinds (lib only). Uncontended: readers (lock_options::shared)
    /// instead of exclusive locks, and all of them on one resource instead of
    /// one resource per chain.
    bool shared = false;
    bool one_resource = false;
    /// Uncontended: distinct resources the chains take in turn (0: one per
    /// chain, the same every cycle). More resources than chains spread the
    /// locks over a cluster member's hash slots, so over its shards.
    int resources = 0;
    /// Contended: the first `writers` workers take exclusive locks and the
    /// `readers` after them shared ones (both 0: every worker exclusive), or
    /// with `permits` > 0 every worker takes one of that many permits.
    int readers = 0;
    int writers = 0;
    int permits = 0;
    /// raw: encode with the library's RESP encoder instead of hiredis's formatter
    /// (a like-for-like reference for the instruction count; not the ceiling).
    bool raw_library_encoder = false;
};

/// Uncontended, with `resources` > `chains`: the resources of chain `chain`
/// are chain, chain + chains, chain + 2 × chains, … below `resources`, taken
/// in turn. No two chains share one, so they never contend. Otherwise each
/// chain has one resource, its own number.
[[nodiscard]] inline auto resources_of_chain(std::size_t chain, std::size_t chains,
                                             std::size_t resources) -> std::vector<std::size_t> {
    std::vector<std::size_t> out{chain};
    for (std::size_t r = chain + chains; r < resources; r += chains) out.push_back(r);
    return out;
}

/// A source of load: the library, or a raw client sending the same commands.
class driver {
public:
    driver() = default;
    driver(const driver&) = delete;
    auto operator=(const driver&) -> driver& = delete;
    virtual ~driver() = default;

    [[nodiscard]] virtual auto name() const -> std::string = 0;
    /// Starts the phase's cycles under `gate` (already opened) and returns at
    /// once; results go to `stats`. The caller waits on the gate.
    virtual void start(phase_gate& gate, phase_stats& stats) = 0;
    /// Called once the gate reports the phase over (joins helper threads).
    virtual void finish() {}
    /// Acquisitions granted by a hand-off so far (client_stats::handoffs).
    [[nodiscard]] virtual auto handoffs() const -> std::uint64_t { return 0; }
    /// Socket writes so far (write system calls to the nodes), read between phases.
    [[nodiscard]] virtual auto writes() const -> std::uint64_t = 0;
    /// Commands sent to the nodes so far, by the client's own count.
    [[nodiscard]] virtual auto requests() const -> std::uint64_t = 0;
    /// Between measuring(true) and measuring(false) the phases are measured
    /// ones (not warm-ups): what a driver counts of its own, it counts there.
    virtual void measuring(bool /*on*/) {}
    /// Adds the figures of its own, over the measured phases, to its mode's JSON.
    virtual void add_json(nlohmann::ordered_json& /*out*/) const {}
};

/// A contended worker's critical section: a sleep of `hold`. Linux lets a
/// thread's sleep overrun by its timer slack, 50 µs by default: 5 % of a 1 ms
/// hold that is the sleep's, not the lock's. So the workers ask for 1 ns.
inline void hold_lock_for(std::chrono::nanoseconds hold) {
    thread_local const bool precise = [] {
        return prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0;
    }();
    (void)precise;
    std::this_thread::sleep_for(hold);
}

}  // namespace redlock::bench
