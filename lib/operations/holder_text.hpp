#pragma once

// Who holds a lock, for people (lock_options::holder): the default text, what
// a given one may hold, and the value it is stored in.

#include "redlock/lock.hpp"

#include <string>
#include <string_view>

namespace redlock::detail {

/// "<host name>:<pid> (<program name>)": made on first use, and again in a
/// forked child (whose pid differs).
[[nodiscard]] auto default_holder() -> const std::string&;

/// What is wrong with `holder` as a holder text, or empty: too long, or a
/// control character (it is printed in messages and logs as it is).
[[nodiscard]] auto holder_problem(std::string_view holder) -> std::string;

/// The value a lock starts with: 32 characters for the token (each attempt
/// writes a fresh one: random_source::write_token), then "|" + `holder`
/// unless it is empty.
[[nodiscard]] auto value_template(std::string_view holder) -> std::string;

}  // namespace redlock::detail
