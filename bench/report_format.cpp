// Text formats of the report's figures (significant digits, thin-space thousands, inline code).
#include "report_format.hpp"

#include <cmath>
#include <cstdio>

namespace redlock::bench {

auto fixed(double v, int decimals) -> std::string {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

auto sig3(double v) -> std::string {
    if (v == 0) return "0";
    const double a = std::fabs(v);
    if (a >= 100) return fixed(v, 0);
    if (a >= 10) return fixed(v, 1);
    if (a >= 1) return fixed(v, 2);
    if (a >= 0.1) return fixed(v, 3);
    return fixed(v, 4);
}

auto count(double v) -> std::string {
    auto n = static_cast<long long>(std::llround(v));
    std::string digits = std::to_string(n < 0 ? -n : n);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += "\u202f";
        out += digits[i];
    }
    return n < 0 ? "-" + out : out;
}

auto code(const std::string& text) -> std::string {
    std::string out;
    out.reserve(text.size() + 2);
    out += '`';
    for (const char c : text) {
        if (c == '|') out += '\\';  // a pipe would end the table cell, even in code
        out += c;
    }
    out += '`';
    return out;
}

auto ms(const nlohmann::json& ns) -> std::string {
    return sig3(ns.get<double>() / 1e6);
}

auto ratio(double a, double b) -> std::string {
    return b > 0 ? fixed(a / b, 2) : "–";
}

}  // namespace redlock::bench
