#pragma once

#include "redlock/error.hpp"

#include <cassert>
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

/// A value or an error: the subset of C++23 std::expected this library needs,
/// under the same member names, so that switching later is mechanical.
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

    [[nodiscard]] auto value() & -> T& { return std::get<0>(state_); }
    [[nodiscard]] auto value() const& -> const T& { return std::get<0>(state_); }
    [[nodiscard]] auto value() && -> T&& { return std::get<0>(std::move(state_)); }
    [[nodiscard]] auto error() const& -> const E& {
        assert(!has_value());
        return *std::get_if<1>(&state_);
    }
    [[nodiscard]] auto error() && -> E&& {
        assert(!has_value());
        return std::move(*std::get_if<1>(&state_));
    }

    auto operator->() noexcept -> T* { return std::get_if<0>(&state_); }
    auto operator->() const noexcept -> const T* { return std::get_if<0>(&state_); }
    auto operator*() & noexcept -> T& { return *std::get_if<0>(&state_); }
    auto operator*() const& noexcept -> const T& { return *std::get_if<0>(&state_); }
    auto operator*() && noexcept -> T&& { return std::move(*std::get_if<0>(&state_)); }

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
