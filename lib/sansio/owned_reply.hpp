#pragma once

// A reply kept past the call it was given in: a deep copy, in three buffers.
// A cluster or Sentinel member with wait_replicas holds a grant's answer until
// WAIT's answer says whether it counts (replica_ack).

#include "sansio/reply.hpp"

#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

class owned_reply {
public:
    owned_reply() = default;
    explicit owned_reply(const reply* r);
    owned_reply(owned_reply&&) noexcept = default;
    auto operator=(owned_reply&&) noexcept -> owned_reply& = default;
    owned_reply(const owned_reply&) = delete;
    auto operator=(const owned_reply&) -> owned_reply& = delete;
    ~owned_reply() = default;

    /// The copy (null for a default-constructed one); valid while this lives.
    [[nodiscard]] auto get() const noexcept -> const reply* {
        return values_.empty() ? nullptr : &values_.front();
    }

private:
    // Sized once before filling, so that the views into them stay valid.
    std::vector<reply> values_;
    std::vector<const reply*> children_;
    std::unique_ptr<char[]> text_;
};

/// `wanted` replicas must have acknowledged a write for it to count. The answer
/// a write (a grant, a fence confirm, an extend) gets from a member with
/// wait_replicas: the write's own answer when WAIT confirmed it, else an error
/// saying how many acknowledged. `wait_event` is WAIT's outcome.
struct replica_verdict {
    bool counts = false;
    std::string cause;  ///< when it does not count
};
[[nodiscard]] auto replica_ack(const reply_event& wait_event, int wanted) -> replica_verdict;

}  // namespace redlock::detail
