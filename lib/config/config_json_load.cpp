// parse_config and load_config: from JSON text (or a file) to a client_config.
// This file does the syntax pass (invalid JSON, duplicate keys) and hands the
// document to read_config_document (config_json_fields.cpp) for the fields.
// No exception escapes: nlohmann is used with allow_exceptions=false, and
// anything thrown anyway (std::bad_alloc) becomes a config_error.

#include "config/config_json_errors.hpp"
#include "config/config_json_fields.hpp"
#include "redlock/config.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace redlock {
namespace {

using json = nlohmann::json;

constexpr std::size_t max_file_size = std::size_t{16} << 20U;  // a config is a few hundred bytes

/// nlohmann keeps the last of two equal keys in an object. A repeated key is
/// as much a mistake as an unknown one (which of the two did the author mean?),
/// so the parse callback records the JSON pointer of the first repetition.
class duplicate_key_finder {
public:
    auto operator()(int /*depth*/, json::parse_event_t event, json& parsed) -> bool {
        switch (event) {
            case json::parse_event_t::object_start:
                stack_.push_back(frame{false, 0, {}, {}});
                break;
            case json::parse_event_t::array_start:
                stack_.push_back(frame{true, 0, {}, {}});
                break;
            case json::parse_event_t::key:
                if (!stack_.empty() && parsed.is_string()) {
                    frame& top = stack_.back();
                    top.key = parsed.get_ref<const std::string&>();
                    if (!top.keys.insert(top.key).second && !first_duplicate_)
                        first_duplicate_ = current_pointer();
                }
                break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                if (!stack_.empty()) stack_.pop_back();
                element_done();
                break;
            case json::parse_event_t::value:
                element_done();
                break;
        }
        return true;  // never filter: the document is kept whole
    }

    [[nodiscard]] auto first_duplicate() const -> const std::optional<std::string>& {
        return first_duplicate_;
    }

private:
    /// One open object or array. Only its own position is kept (the pointer is
    /// built on demand), so deeply nested input costs linear memory.
    struct frame {
        bool is_array;
        std::size_t index;
        std::string key;
        std::set<std::string, std::less<>> keys;
    };

    /// The pointer of the value at the current position: the current key of
    /// the innermost object.
    [[nodiscard]] auto current_pointer() const -> std::string {
        // Appended piece by piece: `"/" + token` inlines an insert at the
        // front of a temporary, in which GCC 12 at -O2 sees a false -Wrestrict.
        std::string pointer;
        for (const frame& f : stack_) {
            pointer.push_back('/');
            pointer.append(f.is_array ? std::to_string(f.index)
                                      : detail::json_pointer_token(f.key));
        }
        return pointer;
    }

    void element_done() {
        if (!stack_.empty() && stack_.back().is_array) ++stack_.back().index;
    }

    std::vector<frame> stack_;
    std::optional<std::string> first_duplicate_;
};

auto parse_config_impl(std::string_view json_text, std::string_view source,
                       const std::filesystem::path& base_dir)
    -> result<client_config, config_error> {
    duplicate_key_finder duplicates;
    // parse() copies the callback into a std::function; keep the state here.
    const json root = json::parse(
        json_text.begin(), json_text.end(),
        [&duplicates](int depth, json::parse_event_t event, json& parsed) {
            return duplicates(depth, event, parsed);
        },
        /*allow_exceptions=*/false);
    if (root.is_discarded())
        return failure{
            config_error{std::string{source}, "", detail::describe_json_syntax_error(json_text)}};
    if (const auto& duplicate = duplicates.first_duplicate())
        return failure{config_error{std::string{source}, *duplicate, "duplicate field"}};
    return detail::read_config_document(root, source, base_dir);
}

/// parse_config, with relative paths taken from `base_dir` (see read_config_document).
auto parse_config_from(std::string_view json_text, std::string_view source,
                       const std::filesystem::path& base_dir)
    -> result<client_config, config_error> {
    try {
        return parse_config_impl(json_text, source, base_dir);
    } catch (const std::exception& e) {
        return failure{
            config_error{std::string{source}, "", std::string{"internal error: "} + e.what()}};
    } catch (...) {
        return failure{config_error{std::string{source}, "", "internal error"}};
    }
}

}  // namespace

auto parse_config(std::string_view json_text, std::string_view source)
    -> result<client_config, config_error> {
    return parse_config_from(json_text, source, {});
}

auto load_config(const std::filesystem::path& file) -> result<client_config, config_error> {
    std::string name;
    try {
        name = file.string();
        const auto close = [](std::FILE* f) { (void)std::fclose(f); };
        const std::unique_ptr<std::FILE, decltype(close)> stream{std::fopen(name.c_str(), "rb"),
                                                                 close};
        if (!stream) {
            const int err = errno;
            return failure{
                config_error{name, "", "cannot open: " + std::generic_category().message(err)}};
        }
        std::string text;
        std::array<char, 4096> buffer{};
        while (true) {
            const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), stream.get());
            text.append(buffer.data(), n);
            if (text.size() > max_file_size)
                return failure{config_error{name, "", "cannot read: larger than 16 MiB"}};
            if (n < buffer.size()) break;
        }
        if (std::ferror(stream.get()) != 0) {
            const int err = errno;
            return failure{
                config_error{name, "", "cannot read: " + std::generic_category().message(err)}};
        }
        // Relative paths in the file are relative to its directory ("x.json"
        // alone: the current one, where they are looked for anyway).
        return parse_config_from(text, name, file.parent_path());
    } catch (const std::exception& e) {
        return failure{config_error{name, "", std::string{"internal error: "} + e.what()}};
    } catch (...) {
        return failure{config_error{name, "", "internal error"}};
    }
}

}  // namespace redlock
