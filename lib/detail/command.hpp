#pragma once

#include <hiredis/hiredis.h>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

/// One command in RESP (an array of bulk strings), encoded once and then sent as
/// is to any number of nodes: a fan-out to N nodes costs one encoding, not N.
///
/// The encoding is written here rather than by hiredis's formatter: RESP's
/// request side is a length prefix per argument, and hiredis's sdscatfmt spent
/// about 4 500 instructions per command on it, a quarter of a lock cycle's
/// client cost (docs/benchmarks.md). Replies are still parsed by hiredis, and
/// the unit tests check these bytes against hiredis's formatter.
class encoded_command {
public:
    explicit encoded_command(std::span<const std::string_view> argv);
    encoded_command(std::initializer_list<std::string_view> argv)
        : encoded_command{std::span<const std::string_view>{argv.begin(), argv.size()}} {}
    encoded_command(encoded_command&& other) noexcept;
    auto operator=(encoded_command&& other) noexcept -> encoded_command&;
    encoded_command(const encoded_command&) = delete;
    auto operator=(const encoded_command&) -> encoded_command& = delete;
    ~encoded_command() = default;

    [[nodiscard]] auto bytes() const noexcept -> std::string_view { return {data(), size_}; }

    /// The exact length of `argv`'s encoding.
    [[nodiscard]] static auto encoded_size(std::span<const std::string_view> argv) noexcept
        -> std::size_t;
    /// Writes `argv`'s encoding at `out`, which has room for encoded_size(argv)
    /// bytes; returns the end of what it wrote.
    static auto encode_to(char* out, std::span<const std::string_view> argv) noexcept -> char*;

private:
    // A SET or a release call of a usual key fits in place: encoding one for a
    // fan-out allocates nothing.
    static constexpr std::size_t in_place_capacity = 256;

    [[nodiscard]] auto data() const noexcept -> const char* {
        return heap_ ? heap_.get() : in_place_.data();
    }
    void take(encoded_command& other) noexcept;

    std::unique_ptr<char[]> heap_;  // only when the encoding outgrows in_place_
    std::size_t size_ = 0;
    std::array<char, in_place_capacity> in_place_;  // NOLINT: written before it is read
};

/// Appends one RESP-encoded command to `out`.
void append_command(std::string& out, std::span<const std::string_view> argv);
inline void append_command(std::string& out, std::initializer_list<std::string_view> argv) {
    append_command(out, std::span<const std::string_view>{argv.begin(), argv.size()});
}

/// Reply predicates. The only place outside node_connection that knows
/// hiredis's reply layout (hiredis 0.14 and 1.x agree on these fields).
[[nodiscard]] inline auto is_error(const redisReply* r) noexcept -> bool {
    return r != nullptr && r->type == REDIS_REPLY_ERROR;
}
[[nodiscard]] inline auto is_nil(const redisReply* r) noexcept -> bool {
    return r != nullptr && r->type == REDIS_REPLY_NIL;
}
[[nodiscard]] inline auto is_status_ok(const redisReply* r) noexcept -> bool {
    return r != nullptr && r->type == REDIS_REPLY_STATUS &&
           std::string_view{r->str, r->len} == "OK";
}
[[nodiscard]] inline auto is_integer(const redisReply* r, long long value) noexcept -> bool {
    return r != nullptr && r->type == REDIS_REPLY_INTEGER && r->integer == value;
}
[[nodiscard]] inline auto reply_text(const redisReply* r) noexcept -> std::string_view {
    if (r == nullptr || r->str == nullptr) return {};
    return {r->str, r->len};
}
/// Element `i` of an array reply, if it is an integer.
[[nodiscard]] inline auto array_integer(const redisReply* r, std::size_t i) noexcept
    -> std::optional<long long> {
    if (r == nullptr || r->type != REDIS_REPLY_ARRAY || i >= r->elements) return std::nullopt;
    const redisReply* e = r->element[i];
    if (e == nullptr || e->type != REDIS_REPLY_INTEGER) return std::nullopt;
    return e->integer;
}
/// An integer reply's value.
[[nodiscard]] inline auto integer_of(const redisReply* r) noexcept -> std::optional<long long> {
    if (r == nullptr || r->type != REDIS_REPLY_INTEGER) return std::nullopt;
    return r->integer;
}
/// A script that the node does not have cached (restarted, or SCRIPT FLUSH).
[[nodiscard]] inline auto is_noscript(const redisReply* r) noexcept -> bool {
    return is_error(r) && reply_text(r).starts_with("NOSCRIPT");
}
/// The node is loading its data set after a start: it answers nothing useful yet.
[[nodiscard]] inline auto is_loading(const redisReply* r) noexcept -> bool {
    return is_error(r) && reply_text(r).starts_with("LOADING");
}
/// A short description of an unexpected reply, for error messages.
[[nodiscard]] auto describe_reply(const redisReply* r) -> std::string;

}  // namespace redlock::detail
