#pragma once

// What the copies of a redlock::leadership share (election.hpp): the client,
// the election, the lock underneath, and the value last proclaimed.

#include "redlock/election.hpp"
#include "redlock/lock.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace redlock::detail {

class client_core;

struct leadership_state {
    // Set on the loop thread before the first handle is handed out, constant afterwards.
    std::shared_ptr<client_core> core;
    std::string name;
    lock held;
    std::uint64_t term = 0;

    // Any thread, under the mutex.
    std::mutex mutex;
    std::string value;            ///< the newest value a majority stored
    std::uint64_t value_seq = 0;  ///< its proclamation number (0: the proposal)
    std::uint64_t next_seq = 1;   ///< the next proclamation's number

    [[nodiscard]] static auto handle(std::shared_ptr<leadership_state> state) -> leadership {
        return leadership{std::move(state)};
    }
};

}  // namespace redlock::detail
