#pragma once

// What an election's observer was told (client::observe), awaited from the
// test thread.

#include "support/slowdown.hpp"

#include <redlock/client.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace redlock_test {

/// What an observer was told, awaited from the test thread.
class view_log {
public:
    auto callback() -> std::function<void(const redlock::election_view&)> {
        return [this](const redlock::election_view& v) {
            const std::lock_guard hold{mutex_};
            views_.push_back(v);
            changed_.notify_all();
        };
    }
    /// Waits until a view told from index `from` on satisfies `p`; its index, or nullopt.
    /// `limit` is taken as given (pass scaled(...), support/slowdown.hpp).
    template <class P>
    auto await(std::size_t from, P p,
               std::chrono::milliseconds limit = scaled(std::chrono::seconds{5}))
        -> std::optional<std::size_t> {
        std::unique_lock hold{mutex_};
        std::optional<std::size_t> found;
        changed_.wait_for(hold, limit, [&] {
            for (std::size_t i = from; i < views_.size(); ++i) {
                if (p(views_[i])) {
                    found = i;
                    return true;
                }
            }
            return false;
        });
        return found;
    }
    auto at(std::size_t i) -> redlock::election_view {
        const std::lock_guard hold{mutex_};
        return views_.at(i);
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<redlock::election_view> views_;
};

/// A view that names a leader whose value is `value`.
inline auto leads(const std::string& value) {
    return
        [value](const redlock::election_view& v) { return v.leader && v.leader->value == value; };
}

}  // namespace redlock_test
