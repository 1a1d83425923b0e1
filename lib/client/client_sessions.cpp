// client::open_session and client::close_session (README, "Sessions"): the
// session's renewals are the watchdog's session_keeper; here a session is
// made, and closed by releasing each of its locks.
#include "client/client_sessions.hpp"

#include "client/client_calls.hpp"
#include "operations/lock_state.hpp"
#include "operations/session_state.hpp"
#include "sansio/timing.hpp"
#include "transport/os_random.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace redlock::detail {

namespace {

auto invalid(std::string message) -> error {
    return error{make_error_code(errc::invalid_argument), std::move(message), {}, 0};
}

}  // namespace

auto open_session(const client_config& config, session_options options) -> result<session> {
    if (!config.clusters.empty())
        return failure{invalid("sessions do not support cluster members (config.clusters)")};
    const auto ttl = options.ttl.value_or(config.lock.ttl);
    if (ttl <= std::chrono::milliseconds{0}) return failure{invalid("session ttl must be > 0 ms")};
    if (ttl > max_ttl) return failure{invalid("session ttl must be at most 2147483647 ms")};
    auto state = std::make_shared<session_state>();
    static std::atomic<std::uint64_t> counter{0};
    state->id = random_source{}.lock_value().substr(0, 12) + ":s" +
                std::to_string(counter.fetch_add(1, std::memory_order_relaxed) + 1);
    state->ttl = ttl;
    if (options.on_lost) {
        state->on_lost =
            std::make_unique<std::function<void(const session_loss&)>>(std::move(options.on_lost));
    }
    return session{std::move(state)};
}

void close_session(client_core& core, const session& open, client::close_callback done) {
    const auto& state = open.state();
    if (!state) {
        core.probe({}, [done = std::move(done)](result<std::vector<node_probe>>) {
            done(failure{invalid("close_session: the session handle is empty")});
        });
        return;
    }
    // Nothing joins it from now on; its locks are released one by one, a
    // bounded number at a time.
    state->closed.store(true, std::memory_order_release);
    // Taken out at once: each release then finds its lock gone from the
    // session rather than searching it (O(n) each).
    std::vector<std::shared_ptr<lock_state>> locks;
    {
        std::lock_guard held{state->mutex};
        locks.swap(state->members);
    }
    // At most this many releases in flight: each is a script per node, and
    // a node answers its connection's requests in order, so a thousand sent
    // at once were answered over more than the 50 ms request_timeout and the
    // report counted hundreds of locks as unconfirmed (docs/benchmarks.md,
    // "Sessions"). 64 keep a node's queue under a millisecond here while the
    // round trips still overlap.
    constexpr std::size_t in_flight = 64;
    struct closing {
        client_core* core = nullptr;
        std::vector<std::shared_ptr<lock_state>> locks;
        std::mutex mutex;      ///< guards what follows: callbacks run on the loop thread
        std::size_t next = 0;  ///< the next lock to release
        session_close_report report;
        std::size_t left = 0;
        client::close_callback done;
    };
    auto shared = std::make_shared<closing>();
    shared->core = &core;
    shared->report.locks = locks.size();
    shared->left = locks.size();
    shared->locks = std::move(locks);
    shared->done = std::move(done);
    if (shared->locks.empty()) {
        core.probe({}, [shared](result<std::vector<node_probe>>) { shared->done(shared->report); });
        return;
    }
    // Each release's callback starts the next one (callbacks never run inside
    // the call that started them).
    struct release_next {
        std::shared_ptr<closing> shared;
        void operator()() const {
            std::shared_ptr<lock_state> lock;
            {
                std::lock_guard guard{shared->mutex};
                if (shared->next == shared->locks.size()) return;
                lock = std::move(shared->locks[shared->next++]);
            }
            shared->core->release(std::move(lock), [shared = shared](result<release_report> r) {
                {
                    std::unique_lock guard{shared->mutex};
                    if (r && r->majority()) ++shared->report.released;
                    if (--shared->left == 0) {
                        guard.unlock();
                        shared->done(shared->report);
                        return;
                    }
                }
                release_next{shared}();
            });
        }
    };
    const std::size_t first = std::min(in_flight, shared->locks.size());
    for (std::size_t i = 0; i < first; ++i) release_next{shared}();
}

}  // namespace redlock::detail
