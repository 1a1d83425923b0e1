#pragma once

#include <redlock/error.hpp>

#include <string>

namespace redlock::cli {

// The exit codes of `redlock`, after sysexits(3). Scripts depend on them: never renumber.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;           ///< anything else; the message says what
inline constexpr int exit_usage = 64;            ///< EX_USAGE: bad flags, missing `-- CMD`
inline constexpr int exit_unavailable = 69;      ///< EX_UNAVAILABLE: a quorum of nodes unreachable
inline constexpr int exit_lock_lost = 70;        ///< EX_SOFTWARE: `run` lost the lock while CMD ran
inline constexpr int exit_not_acquired = 75;     ///< EX_TEMPFAIL: not acquired within --wait-ms
inline constexpr int exit_config = 78;           ///< EX_CONFIG: bad or unreadable config
inline constexpr int exit_cannot_execute = 126;  ///< `run`: CMD found but not executable
inline constexpr int exit_not_found = 127;       ///< `run`: CMD not found

/// A failure as the CLI reports it: the exit code, a short machine-readable
/// code (the `error.code` of --json output) and a message for people.
struct failure_report {
    int exit_code = exit_failure;
    std::string code;
    std::string message;
};

/// The exit code and short code for a library error: contended and
/// validity_expired are 75, quorum_unreachable 69, invalid_config 78,
/// invalid_argument 64, everything else 1. The short code is the errc's name.
[[nodiscard]] auto classify(const error& e) -> failure_report;

/// "contended", "quorum_unreachable", ...: the enumerator's name.
[[nodiscard]] auto errc_name(std::error_code code) -> std::string;

}  // namespace redlock::cli
