#pragma once

#include "redlock/export.hpp"

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace redlock {

/// Why an operation did not succeed.
///
/// The numeric values are part of the API: they appear in logs and in the CLI's
/// exit-code mapping. Append new values at the end; never renumber.
enum class errc {
    /// Another owner holds the lock on enough nodes that no majority is possible
    /// ("already locked"). Nothing is wrong with the deployment; retry later.
    contended = 1,
    /// Fewer than a majority of nodes answered in time. The deployment is
    /// degraded (nodes down, frozen or partitioned); retrying soon rarely helps.
    quorum_unreachable,
    /// A majority granted the lock, but acquiring took so long that no validity
    /// was left after subtracting elapsed time and clock drift. It was released.
    validity_expired,
    /// release/extend: the lock is no longer held on a majority (expired, lost
    /// or taken over).
    not_held,
    /// The operation was cancelled by its caller; whatever it held was released.
    cancelled,
    /// A bad argument: an empty resource name, a TTL of zero, and the like.
    invalid_argument,
    /// The configuration failed validation; the message names the field.
    invalid_config,
    /// The client was shut down before the operation completed.
    client_stopped,
    /// A blocking call was made on the client's event-loop thread.
    would_deadlock,
    /// The lock was lost while held: renewals could not reach a quorum in time.
    lock_lost,
};

[[nodiscard]] REDLOCK_API auto redlock_category() noexcept -> const std::error_category&;

[[nodiscard]] inline auto make_error_code(errc e) noexcept -> std::error_code {
    return {static_cast<int>(e), redlock_category()};
}

/// What one node did in one operation. Reported per node so that a log line can
/// say *which* master refused, timed out or was unreachable.
enum class node_status : std::uint8_t {
    ok,           ///< granted / deleted / extended, as the operation asked
    refused,      ///< answered, but said no (key held by another value, or absent)
    error,        ///< answered with a Redis error (WRONGTYPE, READONLY, OOM, ...)
    timeout,      ///< no answer within request_timeout
    unreachable,  ///< not connected, or the connection dropped mid-request
    cancelled,    ///< no answer was needed any more (client stopping)
    /// No answer yet when the operation was decided: a release returns once a
    /// majority has deleted (or no majority can), and the nodes still to answer
    /// are reported pending; their late outcome is counted in client_stats
    /// (release_late_deleted, release_late_failed).
    pending,
};

[[nodiscard]] REDLOCK_API auto to_string(node_status s) noexcept -> const char*;
/// The enumerator's name ("contended", "quorum_unreachable", ...), for logs and
/// machine-readable output; "unknown" for a value this version does not know.
[[nodiscard]] REDLOCK_API auto to_string(errc e) noexcept -> const char*;

/// A node's name in a report: "host:port" or "unix:/path" as configured, or a member's
/// ("cluster host:port", "sentinel <master name>"). The text is the client's, shared by every
/// report that names the node (a report copies no string, whatever the name's length), and
/// it outlives the client. It reads as a std::string_view: compare it, print it, add it to a
/// std::string; str() copies it out.
class node_name {
public:
    node_name() = default;
    node_name(std::string text)  // NOLINT(google-explicit-constructor): a name is its text
        : text_{std::make_shared<const std::string>(std::move(text))} {}
    node_name(const char* text) : node_name(std::string{text}) {}  // NOLINT

    [[nodiscard]] auto view() const noexcept -> std::string_view {
        return text_ ? std::string_view{*text_} : std::string_view{};
    }
    [[nodiscard]] auto str() const -> std::string { return std::string{view()}; }
    operator std::string_view() const noexcept { return view(); }  // NOLINT
    [[nodiscard]] auto size() const noexcept -> std::size_t { return view().size(); }
    [[nodiscard]] auto empty() const noexcept -> bool { return view().empty(); }

    friend auto operator==(const node_name& a, std::string_view b) noexcept -> bool {
        return a.view() == b;
    }
    friend auto operator<<(std::ostream& os, const node_name& n) -> std::ostream& {
        return os << n.view();
    }
    friend auto operator+(std::string text, const node_name& n) -> std::string {
        text += n.view();
        return text;
    }
    friend auto operator+(const node_name& n, std::string_view text) -> std::string {
        std::string out{n.view()};
        out += text;
        return out;
    }

private:
    std::shared_ptr<const std::string> text_;
};

struct node_report {
    node_name node;      ///< "host:port" or "unix:/path", as configured (see node_name)
    node_status status;  ///< outcome on that node
    std::string detail;  ///< the Redis error text or transport cause; empty when ok
};

/// An error as a value: a code for programs, a message for people (it names the
/// resource, the nodes and their causes), and the per-node outcomes of the last
/// attempt.
struct error {
    std::error_code code;
    std::string message;
    std::vector<node_report> nodes;
    int attempts = 0;  ///< acquisition attempts made; 0 for other operations
};

// One way to print any error the library returns: `os << x` writes exactly
// to_string(x), for errc, node_status and error here and config_error in
// redlock/config.hpp, so a caller never has to know which member holds the text
// or cast a code to print its name.

/// "contended: <message>": the errc name, then the message
/// (the code's generic text when the message is empty). A code from another
/// category is named "<category>:<value>".
[[nodiscard]] REDLOCK_API auto to_string(const error& e) -> std::string;

REDLOCK_API auto operator<<(std::ostream& os, errc e) -> std::ostream&;
REDLOCK_API auto operator<<(std::ostream& os, node_status s) -> std::ostream&;
REDLOCK_API auto operator<<(std::ostream& os, const error& e) -> std::ostream&;

}  // namespace redlock

template <>
struct std::is_error_code_enum<redlock::errc> : std::true_type {};
