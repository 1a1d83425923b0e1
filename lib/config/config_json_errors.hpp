#pragma once

// The text of the errors found while reading a configuration's JSON: the JSON
// pointer that names the field, how a wrong value is shown, the "did you mean"
// of an unknown key, and where a syntax error is. Shared by the syntax pass
// (config_json_load.cpp) and the field reader (config_json_fields.cpp), so the
// two name a field the same way.

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

/// One reference token of a JSON pointer (RFC 6901): "~" -> "~0", "/" -> "~1".
[[nodiscard]] auto json_pointer_token(std::string_view token) -> std::string;

/// The pointer of member `key` (or element `index`) of the value at `parent`.
[[nodiscard]] auto json_pointer(std::string_view parent, std::string_view key) -> std::string;
[[nodiscard]] auto json_pointer(std::string_view parent, std::size_t index) -> std::string;

/// What a value of the wrong type was, for "must be an integer (got "10")".
/// Scalars are shown as written; containers only by kind.
[[nodiscard]] auto describe_json_value(const nlohmann::json& value) -> std::string;

/// "unknown field", with the closest of the `known` keys when one is close
/// enough to be a likely typo.
[[nodiscard]] auto unknown_field_message(std::string_view key,
                                         std::span<const std::string_view> known) -> std::string;

/// Why `text` is not valid JSON, with the byte offset of the error.
[[nodiscard]] auto describe_json_syntax_error(std::string_view text) -> std::string;

}  // namespace redlock::detail
