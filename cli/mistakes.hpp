#pragma once

// The command line's likely mistakes, named with what to do instead (issue 27):
// a mistyped subcommand or flag, a config file given to run's -c, and a value
// released or extended as the wrong kind of lock.

#include "options.hpp"

#include <CLI/CLI.hpp>
#include <redlock/redlock.hpp>

#include <optional>
#include <string>

namespace redlock::cli {

/// After a parse error: the first word of argv[1..argc) that `app` does not
/// know, as "unknown subcommand 'aquire': did you mean 'acquire'?" or "unknown
/// flag '--resurce': did you mean '--resource'?" (without the question when
/// nothing is close). Empty when every word is known: the parser's own message
/// says what is wrong then.
[[nodiscard]] auto unknown_word_message(const CLI::App& app, int argc, char** argv) -> std::string;

/// True when run's -c argument names an existing file of JSON: a config file,
/// meant for --config, that /bin/sh would run.
[[nodiscard]] auto names_json_file(const std::string& shell_command) -> bool;

/// The permit count K the nodes keep for `resource` (the most of the reachable
/// nodes that know one agree on), if any node knows the resource as a semaphore.
[[nodiscard]] auto known_permits(client& locks, const std::string& resource) -> std::optional<int>;

/// After release or extend found `args.value` not held as the kind its flags
/// name: what it is held as and which flag says so ("this value is held as a
/// reader: add --shared", "... as one of 2 permits: add --permits 2"), or empty
/// when it is not held as another kind either. Read-only.
[[nodiscard]] auto wrong_kind_hint(client& locks, const value_options& args) -> std::string;

}  // namespace redlock::cli
