#pragma once
// What a node answered, as the decisions see it: a RESP value in a type of our own. The
// transport parses the bytes (transport/reply_reader builds these with the C client's parser);
// nothing here knows that library, so a decision can be fed a reply built by hand in a test.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

enum class reply_kind : std::uint8_t { string, array, integer, nil, status, error };

/// One RESP value. `text` holds a string's, a status's or an error's bytes; `elements` an
/// array's values (never null). The memory belongs to whoever built it: the reader frees a
/// reply after the one call it was given to.
struct reply {
    reply_kind kind = reply_kind::nil;
    long long integer = 0;
    std::string_view text;
    std::span<const reply* const> elements;
};

/// How a request ended.
enum class request_status : std::uint8_t {
    reply,        ///< the node answered (possibly with a Redis error reply)
    timeout,      ///< no answer within the request's deadline (its slot stays)
    unreachable,  ///< not connected, or the connection dropped before the answer
    stopped,      ///< the client is shutting down
};

/// One request's outcome, as given to its reply_sink.
struct reply_event {
    request_status status;
    const reply* answer;     ///< non-null iff status == reply; valid only during the call
    std::string_view cause;  ///< transport cause when status != reply
};

/// Receives the outcome of requests. on_reply runs exactly once per request,
/// on the loop thread, never inside the call that sent it.
class reply_sink {
public:
    virtual void on_reply(std::uint32_t tag, const reply_event& event) noexcept = 0;

protected:
    reply_sink() = default;
    reply_sink(const reply_sink&) = default;
    auto operator=(const reply_sink&) -> reply_sink& = default;
    virtual ~reply_sink() = default;
};

// Reply predicates: what the decisions ask of a reply. Each takes null as "no reply".
[[nodiscard]] inline auto is_error(const reply* r) noexcept -> bool {
    return r != nullptr && r->kind == reply_kind::error;
}
[[nodiscard]] inline auto is_nil(const reply* r) noexcept -> bool {
    return r != nullptr && r->kind == reply_kind::nil;
}
[[nodiscard]] inline auto is_array(const reply* r, std::size_t size) noexcept -> bool {
    return r != nullptr && r->kind == reply_kind::array && r->elements.size() == size;
}
[[nodiscard]] inline auto is_status_ok(const reply* r) noexcept -> bool {
    return r != nullptr && r->kind == reply_kind::status && r->text == "OK";
}
[[nodiscard]] inline auto is_integer(const reply* r, long long value) noexcept -> bool {
    return r != nullptr && r->kind == reply_kind::integer && r->integer == value;
}
/// A string's, status's or error's text (empty for anything else).
[[nodiscard]] inline auto reply_text(const reply* r) noexcept -> std::string_view {
    return r == nullptr ? std::string_view{} : r->text;
}
/// An integer reply's value.
[[nodiscard]] inline auto integer_of(const reply* r) noexcept -> std::optional<long long> {
    if (r == nullptr || r->kind != reply_kind::integer) return std::nullopt;
    return r->integer;
}
/// Element `i` of an array reply, if there is one.
[[nodiscard]] inline auto element_of(const reply* r, std::size_t i) noexcept -> const reply* {
    if (r == nullptr || r->kind != reply_kind::array || i >= r->elements.size()) return nullptr;
    return r->elements[i];
}
/// Element `i` of an array reply, if it is an integer.
[[nodiscard]] inline auto array_integer(const reply* r, std::size_t i) noexcept
    -> std::optional<long long> {
    return integer_of(element_of(r, i));
}
/// A script that the node does not have cached (restarted, or SCRIPT FLUSH).
[[nodiscard]] inline auto is_noscript(const reply* r) noexcept -> bool {
    return is_error(r) && r->text.starts_with("NOSCRIPT");
}
/// The node is loading its data set after a start: it answers nothing useful yet.
[[nodiscard]] inline auto is_loading(const reply* r) noexcept -> bool {
    return is_error(r) && r->text.starts_with("LOADING");
}
/// A short description of an unexpected reply, for error messages.
[[nodiscard]] auto describe_reply(const reply* r) -> std::string;

}  // namespace redlock::detail
