#pragma once

#include "exit_codes.hpp"

#include <nlohmann/json.hpp>
#include <redlock/error.hpp>
#include <redlock/lock.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

using json = nlohmann::json;

/// Where everything the CLI says goes, in one place.
///
/// Human mode: results on stdout, errors and details on stderr. --json mode:
/// exactly one JSON object on stdout (the result, or {"error": {...}}), and
/// stderr only for --verbose details. --verbose adds per-node details on stderr
/// in both modes. Only the main thread writes through it.
class reporter {
public:
    reporter(bool json_mode, bool verbose) : json_{json_mode}, verbose_{verbose} {}

    [[nodiscard]] auto json_mode() const noexcept -> bool { return json_; }
    [[nodiscard]] auto verbose() const noexcept -> bool { return verbose_; }

    /// --json: writes `object` as the one line on stdout. Human mode: writes `text`
    /// (which ends in a newline, or is empty) on stdout.
    void result(const json& object, std::string_view text) const;

    /// A line on stderr, in human mode only: "redlock: <text>".
    void note(std::string_view text) const;
    /// A line on stderr when --verbose, in either mode: "redlock: <text>".
    void detail(std::string_view text) const;
    /// One stderr line per node report, when --verbose.
    void detail(const std::vector<node_report>& nodes) const;

    /// Reports a failure and returns its exit code. --json: {"error": {"code",
    /// "message"[, "nodes"] plus `error_fields`'s members}} plus `extra`'s
    /// members on stdout; human mode: "redlock: <message>" on stderr (and the
    /// nodes with --verbose).
    auto fail(const failure_report& failure, const std::vector<node_report>& nodes = {},
              const json& extra = json::object(), const json& error_fields = json::object()) const
        -> int;
    /// fail() for a library error, classified by classify().
    auto fail(const error& e, const json& extra = json::object()) const -> int;

private:
    bool json_;
    bool verbose_;
};

/// [{"node", "status", "detail"}, ...]
[[nodiscard]] auto nodes_json(const std::vector<node_report>& nodes) -> json;

/// The lock's fencing token, or null.
[[nodiscard]] auto fence_json(const lock& held) -> json;

/// "1234 ms"
[[nodiscard]] auto format_ms(long long ms) -> std::string;

/// A lock's value for people: "build-7:4411 (nightly-report) [value 3f2a...|build-7:4411
/// (nightly-report)]" (its holder text first: holder_of), or the value alone when it names
/// nobody.
[[nodiscard]] auto named_value(const std::string& value) -> std::string;

/// `text` as one word for sh: in single quotes (each ' as '\''), or as it is
/// when it holds nothing a shell would take apart.
[[nodiscard]] auto shell_quoted(std::string_view text) -> std::string;

/// "exclusive", "shared" or "permit": the "kind" of --json output.
[[nodiscard]] auto kind_name(lock_kind kind) -> std::string;

/// Adds "kind", "permit" (the index held, or null) and "permits" (K, or null)
/// to `object`.
void add_kind(json& object, const lock& held);

/// "reader of " or "permit 2 of 3 of " before a resource's name; "" for an
/// exclusive lock.
[[nodiscard]] auto kind_phrase(const lock& held) -> std::string;

/// The flags naming the lock's kind on a command line: " --shared",
/// " --permits 3", or "".
[[nodiscard]] auto kind_flags(const lock& held) -> std::string;

/// The value, or null.
template <class T>
[[nodiscard]] auto or_null(const std::optional<T>& value) -> json {
    if (value) return *value;
    return nullptr;
}

/// `text` padded to `width` columns, and at least one space after it, so
/// that a long node name (a Unix socket path) does not run into the next column.
[[nodiscard]] auto pad(std::string text, std::size_t width) -> std::string;

}  // namespace redlock::cli
