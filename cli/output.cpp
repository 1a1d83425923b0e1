#include "output.hpp"

#include <algorithm>
#include <cstdio>

namespace redlock::cli {
namespace {

void write_line(std::FILE* stream, std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stream);
    std::fputc('\n', stream);
    std::fflush(stream);
}

// Node details and Redis error texts are not ours: replace invalid UTF-8
// rather than throw while printing.
auto dump(const json& object) -> std::string {
    return object.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

void reporter::result(const json& object, std::string_view text) const {
    if (json_) {
        write_line(stdout, dump(object));
        return;
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

void reporter::note(std::string_view text) const {
    if (!json_) write_line(stderr, "redlock: " + std::string{text});
}

void reporter::detail(std::string_view text) const {
    if (verbose_) write_line(stderr, "redlock: " + std::string{text});
}

void reporter::detail(const std::vector<node_report>& nodes) const {
    if (!verbose_) return;
    for (const auto& n : nodes) {
        std::string line = "  " + n.node + ": " + to_string(n.status);
        if (!n.detail.empty()) line += ": " + n.detail;
        write_line(stderr, line);
    }
}

auto reporter::fail(const failure_report& failure, const std::vector<node_report>& nodes,
                    const json& extra, const json& error_fields) const -> int {
    if (json_) {
        json out = extra.is_object() ? extra : json::object();
        json error = error_fields.is_object() ? error_fields : json::object();
        error["code"] = failure.code;
        error["message"] = failure.message;
        if (!nodes.empty()) error["nodes"] = nodes_json(nodes);
        out["error"] = std::move(error);
        write_line(stdout, dump(out));
    } else {
        write_line(stderr, "redlock: " + failure.message);
    }
    detail(nodes);
    return failure.exit_code;
}

auto reporter::fail(const error& e, const json& extra) const -> int {
    return fail(classify(e), e.nodes, extra);
}

auto nodes_json(const std::vector<node_report>& nodes) -> json {
    json out = json::array();
    for (const auto& n : nodes) {
        out.push_back({{"node", n.node}, {"status", to_string(n.status)}, {"detail", n.detail}});
    }
    return out;
}

auto fence_json(const lock& held) -> json {
    if (const auto fence = held.fence()) return *fence;
    return nullptr;
}

auto format_ms(long long ms) -> std::string {
    return std::to_string(ms) + " ms";
}

auto kind_name(lock_kind kind) -> std::string {
    switch (kind) {
        case lock_kind::shared:
            return "shared";
        case lock_kind::permit:
            return "permit";
        case lock_kind::exclusive:
            break;
    }
    return "exclusive";
}

void add_kind(json& object, const lock& held) {
    object["kind"] = kind_name(held.kind());
    object["permit"] = or_null(held.permit());
    object["permits"] = or_null(held.permits());
}

auto kind_phrase(const lock& held) -> std::string {
    if (held.kind() == lock_kind::shared) return "reader of ";
    if (held.kind() != lock_kind::permit) return {};
    const std::string of = held.permits() ? " of " + std::to_string(*held.permits()) : "";
    return held.permit() ? "permit " + std::to_string(*held.permit()) + of + " of "
                         : "a permit of ";
}

auto kind_flags(const lock& held) -> std::string {
    if (held.kind() == lock_kind::shared) return " --shared";
    if (held.kind() == lock_kind::permit && held.permits())
        return " --permits " + std::to_string(*held.permits());
    return {};
}

auto pad(std::string text, std::size_t width) -> std::string {
    text.resize(std::max(width, text.size() + 1), ' ');
    return text;
}

auto named_value(const std::string& value) -> std::string {
    const std::string_view name = holder_of(value);
    return name.empty() ? value : std::string{name} + " [value " + value + "]";
}

auto shell_quoted(std::string_view text) -> std::string {
    const bool plain = !text.empty() && text.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_-.,:/@%+=") == std::string_view::npos;
    if (plain) return std::string{text};
    std::string out = "'";
    for (const char c : text) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

}  // namespace redlock::cli
