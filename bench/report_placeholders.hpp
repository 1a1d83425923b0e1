// The report's template filling: the value of each {{name}} of bench/benchmarks.md.in.
#pragma once

#include "report_input.hpp"

#include <map>
#include <optional>
#include <string>

namespace redlock::bench {

/// The values of the template's placeholders: tables, and single figures for the prose.
class placeholders {
public:
    explicit placeholders(const results& r) : r_{r} {}

    /// The value of placeholder `name`, or nullopt if there is no such placeholder.
    [[nodiscard]] auto value(const std::string& name) const -> std::optional<std::string>;

private:
    /// The single figures for the prose, by name (computed once).
    [[nodiscard]] auto scalars() const -> const std::map<std::string, std::string>&;

    const results& r_;
    mutable std::map<std::string, std::string> scalars_;
};

/// `text` with every {{name}} replaced by its value; each unknown name is
/// appended to `problem` (and left out of the text).
[[nodiscard]] auto fill(const std::string& text, const placeholders& values, std::string& problem)
    -> std::string;

}  // namespace redlock::bench
