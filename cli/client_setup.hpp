#pragma once

#include "exit_codes.hpp"
#include "options.hpp"
#include "output.hpp"

#include <redlock/redlock.hpp>

namespace redlock::cli {

/// Loads the config named by --config, else $REDLOCK_CONFIG, else the first
/// found by the search (config_search.hpp), and creates a client on it;
/// --verbose says which file and why. The library's log lines go to stderr with --verbose, nowhere
/// otherwise: the CLI reports per-node outcomes itself. Fails with exit_config
/// and a message naming the file and the field. `waits`: the process is going
/// to wait for a lock (--wait-ms): its release notifications' connections are
/// opened at once, and it starts once they are answered (or briefly not).
[[nodiscard]] auto open_client(const global_options& global, const reporter& out,
                               bool waits = false) -> result<client, failure_report>;

/// The lock_options for the flags: --ttl-ms, --wait-ms (0: attempts = 1;
/// otherwise max_wait with attempts unlimited until it), --fence, --fair,
/// --shared, --permits.
[[nodiscard]] auto make_lock_options(const lock_flags& flags) -> lock_options;

/// The handle `release` and `extend` act on: the value adopted as a writer's,
/// a reader's (--shared) or a permit's (--permits K).
[[nodiscard]] auto adopt_value(const client& locks, const value_options& args) -> lock;

}  // namespace redlock::cli
