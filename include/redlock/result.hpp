#pragma once

#include "redlock/error.hpp"

#include <cassert>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace redlock {

/// Marks an error so that `result` can tell it apart from a value.
template <class E>
struct failure {
    E error;
};

template <class E>
failure(E) -> failure<E>;

/// What result::value() throws when the result holds an error, as
/// std::expected's bad_expected_access: it carries the error, and what() says
/// what it was (the library's message, for redlock::error).
template <class E>
class bad_result_access : public std::exception {
public:
    explicit bad_result_access(E e) : error_{std::move(e)} {
        what_ = "redlock: value() of a result that holds an error";
        if constexpr (requires { std::string{error_.message}; }) what_ += ": " + error_.message;
    }
    [[nodiscard]] auto what() const noexcept -> const char* override { return what_.c_str(); }
    [[nodiscard]] auto error() const& noexcept -> const E& { return error_; }

private:
    E error_;
    std::string what_;
};

/// A value or an error: the subset of C++23 std::expected this library needs,
/// under the same member names, so that switching later is mechanical. Check
/// it (`if (r)`) before `*r` or `r->`: on an error they assert in debug builds
/// and are undefined otherwise; value() throws bad_result_access instead.
template <class T, class E = error>
class [[nodiscard]] result {
public:
    // Implicit on purpose: `return value;` and `return failure{err};` both read naturally.
    result(T value) noexcept(std::is_nothrow_move_constructible_v<T>)  // NOLINT
        : state_{std::in_place_index<0>, std::move(value)} {}

    template <class G>
    requires std::is_constructible_v<E, G> result(failure<G> f)
        : state_{std::in_place_index<1>, E(std::move(f.error))} {}  // NOLINT

    [[nodiscard]] auto has_value() const noexcept -> bool { return state_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    [[nodiscard]] auto value() & -> T& {
        if (!has_value()) throw bad_result_access<E>(*std::get_if<1>(&state_));
        return *std::get_if<0>(&state_);
    }
    [[nodiscard]] auto value() const& -> const T& {
        if (!has_value()) throw bad_result_access<E>(*std::get_if<1>(&state_));
        return *std::get_if<0>(&state_);
    }
    [[nodiscard]] auto value() && -> T&& {
        if (!has_value()) throw bad_result_access<E>(std::move(*std::get_if<1>(&state_)));
        return std::move(*std::get_if<0>(&state_));
    }
    [[nodiscard]] auto error() const& -> const E& {
        assert(!has_value());
        return *std::get_if<1>(&state_);
    }
    [[nodiscard]] auto error() && -> E&& {
        assert(!has_value());
        return std::move(*std::get_if<1>(&state_));
    }

    // An error here is a bug in the caller: caught by the assertion in debug builds.
    auto operator->() noexcept -> T* {
        assert(has_value() && "result::operator-> on an error: check the result first");
        return std::get_if<0>(&state_);
    }
    auto operator->() const noexcept -> const T* {
        assert(has_value() && "result::operator-> on an error: check the result first");
        return std::get_if<0>(&state_);
    }
    auto operator*() & noexcept -> T& {
        assert(has_value() && "result::operator* on an error: check the result first");
        return *std::get_if<0>(&state_);
    }
    auto operator*() const& noexcept -> const T& {
        assert(has_value() && "result::operator* on an error: check the result first");
        return *std::get_if<0>(&state_);
    }
    auto operator*() && noexcept -> T&& {
        assert(has_value() && "result::operator* on an error: check the result first");
        return std::move(*std::get_if<0>(&state_));
    }

private:
    std::variant<T, E> state_;
};

/// result<void>: success carries nothing.
template <class E>
class [[nodiscard]] result<void, E> {
public:
    result() = default;

    template <class G>
    requires std::is_constructible_v<E, G> result(failure<G> f)
        : error_{E(std::move(f.error))}, ok_{false} {}  // NOLINT

    [[nodiscard]] auto has_value() const noexcept -> bool { return ok_; }
    explicit operator bool() const noexcept { return ok_; }
    [[nodiscard]] auto error() const& -> const E& {
        assert(!ok_);
        return error_;
    }

private:
    E error_{};
    bool ok_ = true;
};

}  // namespace redlock
