#pragma once

// What operators use beside status (README, "Operators' tools"): an audited break
// of a stuck lock, its audit log, and Chubby's sequencer check.

#include "redlock/error.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

/// client::force_release's choices.
struct force_release_options {
    /// Who breaks the lock, recorded in the audit and told to the broken
    /// holder. Unset: "<host name>:<pid> (<program name>)". At most
    /// max_holder_length bytes, no control characters.
    std::optional<std::string> breaker{};
    /// The resource is a semaphore of this many permits: its permits are broken
    /// too (without it, only a writer and readers are).
    std::optional<int> permits{};
};

/// One hold a break deleted, and on how many nodes.
struct broken_hold {
    std::string kind;                       ///< "writer", "reader" or "permit"
    std::optional<int> permit;              ///< which permit, for a permit
    std::string value;                      ///< the hold's value
    std::string holder;                     ///< its holder text (holder_of(value)); may be empty
    std::size_t nodes = 0;                  ///< nodes where the break deleted it
    std::chrono::milliseconds ttl_left{0};  ///< the longest TTL it had left there
};

/// What client::force_release did.
struct break_report {
    std::string resource;
    std::size_t quorum = 0;
    /// Nodes that ran the break (and recorded it in their audit stream).
    std::size_t broken_on = 0;
    /// Every hold deleted anywhere, those on the most nodes first.
    std::vector<broken_hold> broken;
    std::vector<node_report> nodes;  ///< ok, or why the break did not run there
    /// True when a majority ran the break: the resource is free, and no hold
    /// it deleted can be renewed (its renewal needs a majority).
    [[nodiscard]] auto majority() const noexcept -> bool { return broken_on >= quorum; }
};

/// One break as the audit stream recorded it (the same on every node that ran it).
struct audit_entry {
    std::string resource;
    /// When the breaker's clock said it broke (milliseconds since the epoch).
    std::chrono::system_clock::time_point time;
    std::string breaker;
    std::string reason;
    std::string kind;   ///< "writer", "reader", "permit <i>", or "none" (nothing was held)
    std::string value;  ///< the broken hold's value (empty for "none")
    std::string holder;
    std::optional<std::uint64_t> fence;  ///< the fence counter there at the break
    std::size_t nodes = 0;               ///< nodes whose stream holds this entry
};

/// client::audit: a resource's breaks (or every resource's), newest first.
struct audit_log {
    std::string resource;  ///< empty when every resource was read
    std::size_t quorum = 0;
    std::vector<audit_entry> entries;   ///< recorded on a majority of nodes
    std::vector<audit_entry> minority;  ///< recorded on fewer (a break that failed)
    std::vector<node_report> nodes;     ///< ok, or why a node did not answer
};

/// One node's view for client::check_fence.
struct node_fence_state {
    std::string node;
    bool reachable = false;
    std::string detail;
    std::optional<std::uint64_t> counter;  ///< the resource's fence counter there
    std::optional<std::string> holder;     ///< the lock key's value there
    std::optional<std::chrono::milliseconds> ttl;
};

/// client::check_fence: is `token` the current token of a lock a majority holds?
struct fence_check {
    std::string resource;
    std::uint64_t token = 0;
    std::size_t quorum = 0;
    /// True when a majority of nodes have the counter at `token` and hold one
    /// writer's value: `token` is current. True only when read: a new holder
    /// may be granted a higher token the next moment.
    bool current = false;
    /// The value a majority hold, if any (its holder text: holder_of).
    std::optional<std::string> holder;
    /// The highest counter any node reported: a token below it is stale.
    std::optional<std::uint64_t> highest;
    std::string reason;  ///< why not current, for people
    std::vector<node_fence_state> nodes;
};

}  // namespace redlock
