// The report's markdown table: a header, per-column alignment and rows of cells.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace redlock::bench {

/// A markdown table, built row by row.
class table {
public:
    /// `align`: one letter per column, 'l' or 'r'; by default the first column
    /// is left-aligned and the others (numbers) right-aligned.
    explicit table(std::vector<std::string> header, std::string align = {})
        : header_{std::move(header)}, align_{std::move(align)} {}
    void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
    [[nodiscard]] auto empty() const noexcept -> bool { return rows_.empty(); }
    [[nodiscard]] auto str() const -> std::string;

private:
    std::vector<std::string> header_;
    std::string align_;
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace redlock::bench
