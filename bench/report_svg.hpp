// SVG line charts for the report: a chart's lines and axes, rendered as an SVG document.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace redlock::bench {

struct series {
    std::string name;
    std::string color;
    bool dashed = false;
    std::vector<std::pair<double, double>> points;
    bool markers_only = false;  // measured at a few points only: no line between them
};

struct chart {
    std::string title;
    std::string x_label;
    std::string y_label;
    bool y_log = false;
    std::vector<double> x_ticks;  // x is always log2 (concurrency)
    std::vector<series> lines;
};

/// The chart as a standalone SVG document (760 × 440, legend on the right).
[[nodiscard]] auto render(const chart& c) -> std::string;

}  // namespace redlock::bench
