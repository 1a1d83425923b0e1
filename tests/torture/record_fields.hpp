#pragma once

// The line format of the torture records (record.hpp, election_record.hpp): a tag, then
// `key=value` fields separated by spaces. Shared by the parsers of every record kind.

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace redlock_torture {

/// `t` (monotonic ns) as milliseconds after `origin`, "12.345": how descriptions name times.
[[nodiscard]] inline auto ms_since(std::int64_t t, std::int64_t origin) -> std::string {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", static_cast<double>(t - origin) / 1e6);
    return text;
}

/// The fields of `line` if it starts with `tag` and a space; nullopt otherwise, or if a word
/// has no '='.
[[nodiscard]] inline auto fields_of(std::string_view line, std::string_view tag)
    -> std::optional<std::map<std::string, std::string>> {
    if (!line.starts_with(tag) || line.size() <= tag.size() || line[tag.size()] != ' ')
        return std::nullopt;
    std::map<std::string, std::string> fields;
    line.remove_prefix(tag.size());
    while (!line.empty()) {
        const auto space = line.find(' ');
        const std::string_view word = line.substr(0, space);
        if (!word.empty()) {
            const auto eq = word.find('=');
            if (eq == std::string_view::npos) return std::nullopt;
            fields.emplace(std::string{word.substr(0, eq)}, std::string{word.substr(eq + 1)});
        }
        if (space == std::string_view::npos) break;
        line.remove_prefix(space + 1);
    }
    return fields;
}

/// The field `key` as a number, whole; false if it is missing or is not one.
template <class T>
auto field_number(const std::map<std::string, std::string>& fields, const char* key, T& out)
    -> bool {
    const auto it = fields.find(key);
    if (it == fields.end()) return false;
    const char* first = it->second.data();
    const char* last = first + it->second.size();
    const auto [end, ec] = std::from_chars(first, last, out);
    return ec == std::errc{} && end == last;
}

/// The field `key` as 0 or 1.
inline auto field_flag(const std::map<std::string, std::string>& fields, const char* key, bool& out)
    -> bool {
    int value = 0;
    if (!field_number(fields, key, value) || (value != 0 && value != 1)) return false;
    out = value == 1;
    return true;
}

}  // namespace redlock_torture
