// The text of configuration errors found in the JSON: JSON pointers, how a
// wrong value is shown, the "did you mean" suggestion for an unknown key, and
// the position of a syntax error. Only the error path runs this code.

#include "config/config_json_errors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {
namespace {

using json = nlohmann::json;

auto edit_distance(std::string_view a, std::string_view b) -> std::size_t {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            const std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
            diagonal = above;
        }
    }
    return row[b.size()];
}

/// With allow_exceptions=false a failed parse only says "discarded". To tell
/// the user where the error is, the text is parsed a second time with a SAX
/// handler that keeps nlohmann's parse error (its byte offset and message).
class parse_error_recorder final : public nlohmann::json_sax<json> {
public:
    auto null() -> bool override { return true; }
    auto boolean(bool /*val*/) -> bool override { return true; }
    auto number_integer(number_integer_t /*val*/) -> bool override { return true; }
    auto number_unsigned(number_unsigned_t /*val*/) -> bool override { return true; }
    auto number_float(number_float_t /*val*/, const string_t& /*s*/) -> bool override {
        return true;
    }
    auto string(string_t& /*val*/) -> bool override { return true; }
    auto binary(binary_t& /*val*/) -> bool override { return true; }
    auto start_object(std::size_t /*elements*/) -> bool override { return true; }
    auto key(string_t& /*val*/) -> bool override { return true; }
    auto end_object() -> bool override { return true; }
    auto start_array(std::size_t /*elements*/) -> bool override { return true; }
    auto end_array() -> bool override { return true; }
    auto parse_error(std::size_t position, const std::string& /*last_token*/,
                     const nlohmann::detail::exception& ex) -> bool override {
        std::string what = ex.what();
        // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
        if (const auto bracket = what.find("] "); what.starts_with('[') && bracket != what.npos)
            what.erase(0, bracket + 2);
        message_ = "invalid JSON at byte " + std::to_string(position) + ": " + what;
        return false;
    }

    [[nodiscard]] auto message() const -> const std::string& { return message_; }

private:
    std::string message_ = "invalid JSON";
};

}  // namespace

auto json_pointer_token(std::string_view token) -> std::string {
    std::string out;
    out.reserve(token.size());
    for (const char c : token) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

auto json_pointer(std::string_view parent, std::string_view key) -> std::string {
    return std::string{parent} + "/" + json_pointer_token(key);
}

auto json_pointer(std::string_view parent, std::size_t index) -> std::string {
    return std::string{parent} + "/" + std::to_string(index);
}

auto describe_json_value(const json& value) -> std::string {
    if (value.is_object()) return "an object";
    if (value.is_array()) return "an array";
    if (value.is_string() && value.get_ref<const std::string&>().size() > 32) return "a string";
    return value.dump();
}

auto unknown_field_message(std::string_view key, std::span<const std::string_view> known)
    -> std::string {
    std::string message = "unknown field";
    std::string_view closest;
    std::size_t best = 3;  // suggest only close matches
    for (const std::string_view candidate : known) {
        // "ttl" for "ttl_ms": a missing unit suffix is a likely slip.
        const bool is_prefix = key.size() >= 3 && candidate.starts_with(key);
        const std::size_t distance = is_prefix ? 1 : edit_distance(key, candidate);
        if (distance < best) {
            best = distance;
            closest = candidate;
        }
    }
    if (!closest.empty()) message += " (did you mean \"" + std::string{closest} + "\"?)";
    return message;
}

auto describe_json_syntax_error(std::string_view text) -> std::string {
    parse_error_recorder recorder;
    (void)json::sax_parse(text.begin(), text.end(), &recorder);
    return recorder.message();
}

}  // namespace redlock::detail
