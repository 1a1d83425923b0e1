#pragma once

// "Did you mean": the closest of the known words to a mistyped one, for the
// usage errors of main.cpp (an unknown subcommand or flag). Pure std, so that
// the unit tests compile it too (tests/unit/cli_suggest_test.cpp).

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace redlock::cli {

/// The Damerau-Levenshtein distance (optimal string alignment): insertions,
/// deletions, substitutions and transpositions of two adjacent characters
/// each cost 1 ("aquire" -> "acquire" is 1, "relaese" -> "release" is 1).
[[nodiscard]] auto typo_distance(std::string_view a, std::string_view b) -> std::size_t;

/// The candidate `word` most likely meant: one that `word` (3 characters or
/// more) begins ("ttl" for "ttl-ms"), else the nearest within a distance of 2
/// (1 for words of 3 characters or fewer, where 2 would match almost anything).
/// Ties go to the first candidate. Empty when none is close.
[[nodiscard]] auto closest_word(std::string_view word, std::span<const std::string> candidates)
    -> std::string;

}  // namespace redlock::cli
