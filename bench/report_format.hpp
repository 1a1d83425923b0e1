// Text formats of the report's figures: fixed, three significant digits, counts, ratios, code.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace redlock::bench {

/// `v` with `decimals` digits after the point.
[[nodiscard]] auto fixed(double v, int decimals) -> std::string;

/// Three significant digits, for latencies and per-lock figures.
[[nodiscard]] auto sig3(double v) -> std::string;

/// Thousands separated by a thin space: 36 395.
[[nodiscard]] auto count(double v) -> std::string;

/// `text` as inline code. (Not "`" + std::string&&: GCC 12's -Wrestrict misfires on it.)
[[nodiscard]] auto code(const std::string& text) -> std::string;

/// Nanoseconds (a JSON number) as milliseconds, three significant digits.
[[nodiscard]] auto ms(const nlohmann::json& ns) -> std::string;

/// a ÷ b with two decimals, or "–" when b is not positive.
[[nodiscard]] auto ratio(double a, double b) -> std::string;

}  // namespace redlock::bench
