#pragma once

// Replies built by hand for the decisions' tests (no socket, no parser), and
// the enumeration of every sequence of answers and every order of nodes.

#include "sansio/reply.hpp"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

namespace redlock_test {

using redlock::detail::reply;
using redlock::detail::reply_event;
using redlock::detail::reply_kind;
using redlock::detail::request_status;

/// One request's outcome as a node connection would report it. The event
/// points into this object: keep it alive while the event is used.
class canned_reply {
public:
    static auto integer(long long v) -> canned_reply {
        return canned_reply{request_status::reply, {reply_kind::integer, v, {}, {}}};
    }
    static auto error(std::string_view text) -> canned_reply {
        return canned_reply{request_status::reply, {reply_kind::error, 0, text, {}}};
    }
    static auto noscript() -> canned_reply {
        return error("NOSCRIPT No matching script. Please use EVAL.");
    }
    static auto nil() -> canned_reply {
        return canned_reply{request_status::reply, {reply_kind::nil, 0, {}, {}}};
    }
    static auto status(std::string_view text) -> canned_reply {
        return canned_reply{request_status::reply, {reply_kind::status, 0, text, {}}};
    }
    /// A transport outcome: no reply, only a cause.
    static auto failed(request_status s, std::string_view cause) -> canned_reply {
        canned_reply r{s, {}};
        r.cause_ = cause;
        return r;
    }
    static auto timeout() -> canned_reply {
        return failed(request_status::timeout, "no reply within 50 ms");
    }

    [[nodiscard]] auto event() const -> reply_event {
        if (status_ == request_status::reply) return reply_event{status_, &value_, {}};
        return reply_event{status_, nullptr, cause_};
    }

private:
    canned_reply(request_status s, reply v) : status_{s}, value_{v} {}

    request_status status_;
    reply value_;
    std::string_view cause_;
};

/// The checks of one enumerated case, reported together (FAIL_CHECK) only if
/// one fails: a doctest assertion per check would cost more than the
/// enumerations of up to a million cases themselves.
class case_checks {
public:
    auto expect(bool ok, const char* what, int line) -> bool {
        if (!ok) failed_.append("\n  line ").append(std::to_string(line)).append(": ").append(what);
        return ok;
    }
    [[nodiscard]] auto failed() const noexcept -> bool { return !failed_.empty(); }
    [[nodiscard]] auto failures() const noexcept -> const std::string& { return failed_; }

private:
    std::string failed_;
};

/// Every sequence of `length` answers out of `kinds`, each once, with its number.
template <class Visit>
void for_each_answers(std::size_t length, std::size_t kinds, Visit&& visit) {
    std::vector<std::size_t> seq(length, 0);
    std::size_t total = 1;
    for (std::size_t i = 0; i < length; ++i) total *= kinds;
    for (std::size_t code = 0; code < total; ++code) {
        std::size_t c = code;
        for (auto& s : seq) {
            s = c % kinds;
            c /= kinds;
        }
        visit(seq, code);
    }
}

/// The nodes in the order they answer: 0..n-1 rotated by `shift`, so that
/// the enumerations do not always hear node 0 first.
inline auto answer_order(std::size_t n, std::size_t shift) -> std::vector<std::size_t> {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shift % n), order.end());
    return order;
}

}  // namespace redlock_test

/// One check of an enumerated case: records the condition's text and line in
/// `checks` when it does not hold, and yields whether it held.
#define REDLOCK_EXPECT(checks, ...) \
    (checks).expect(static_cast<bool>(__VA_ARGS__), #__VA_ARGS__, __LINE__)
