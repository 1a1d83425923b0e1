#pragma once

#include <hiredis/hiredis.h>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

/// Appends one RESP-encoded command to `out`, encoded by hiredis's formatter.
void append_command(std::string& out, std::initializer_list<std::string_view> argv);
void append_command(std::string& out, std::span<const std::string_view> argv);

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
