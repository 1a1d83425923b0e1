// Renders the report's markdown table: header row, alignment row, then one line per row.
#include "report_markdown_table.hpp"

namespace redlock::bench {

auto table::str() const -> std::string {
    std::string s = "|";
    for (const auto& h : header_) s += " " + h + " |";
    s += "\n|";
    for (std::size_t i = 0; i < header_.size(); ++i) {
        const char a = i < align_.size() ? align_[i] : (i == 0 ? 'l' : 'r');
        s += a == 'l' ? "---|" : "--:|";
    }
    s += "\n";
    for (const auto& r : rows_) {
        s += "|";
        for (const auto& c : r) s += " " + c + " |";
        s += "\n";
    }
    return s;
}

}  // namespace redlock::bench
