// Renders a `chart` as SVG: log2 x axis, linear or log10 y axis, gridlines, lines and a legend.
#include "report_svg.hpp"

#include "report_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace redlock::bench {

namespace {

auto escape(const std::string& s) -> std::string {
    std::string out;
    for (const char c : s) {
        if (c == '<') {
            out += "&lt;";
        } else if (c == '>') {
            out += "&gt;";
        } else if (c == '&') {
            out += "&amp;";
        } else {
            out += c;
        }
    }
    return out;
}

auto tick_label(double v) -> std::string {
    if (v >= 1000 && std::fmod(v, 1000) == 0) return fixed(v / 1000, 0) + "k";
    if (v >= 1) return fixed(v, v == std::floor(v) ? 0 : 1);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

}  // namespace

auto render(const chart& c) -> std::string {
    constexpr double width = 760;
    constexpr double height = 440;
    constexpr double left = 80;
    constexpr double right = 190;
    constexpr double top = 40;
    constexpr double bottom = 60;
    const double plot_w = width - left - right;
    const double plot_h = height - top - bottom;

    double x_min = c.x_ticks.front();
    double x_max = c.x_ticks.back();
    double y_min = 1e300;
    double y_max = 0;
    for (const auto& s : c.lines) {
        for (const auto& [x, y] : s.points) {
            if (y <= 0 && c.y_log) continue;
            y_min = std::min(y_min, y);
            y_max = std::max(y_max, y);
        }
    }
    if (y_max <= 0) y_max = 1;
    std::vector<double> y_ticks;
    if (c.y_log) {
        double lo = std::pow(10, std::floor(std::log10(y_min)));
        const double hi = std::pow(10, std::ceil(std::log10(y_max)));
        y_min = lo;
        y_max = hi;
        for (; lo <= hi * 1.0001; lo *= 10) {
            y_ticks.push_back(lo);
            if (lo * 2 < hi) y_ticks.push_back(lo * 2);
            if (lo * 5 < hi) y_ticks.push_back(lo * 5);
        }
    } else {
        y_min = 0;
        const double raw_step = y_max / 5;
        const double mag = std::pow(10, std::floor(std::log10(raw_step)));
        double step = mag;
        for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
            if (mag * m >= raw_step) {
                step = mag * m;
                break;
            }
        }
        y_max = std::ceil(y_max / step) * step;
        for (double v = 0; v <= y_max + step / 2; v += step) y_ticks.push_back(v);
    }
    const auto px = [&](double x) {
        return left +
               (std::log2(x) - std::log2(x_min)) / (std::log2(x_max) - std::log2(x_min)) * plot_w;
    };
    const auto py = [&](double y) {
        const double f =
            c.y_log ? (std::log10(y) - std::log10(y_min)) / (std::log10(y_max) - std::log10(y_min))
                    : (y - y_min) / (y_max - y_min);
        return top + plot_h - f * plot_h;
    };

    std::ostringstream s;
    s << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << width << R"(" height=")" << height
      << R"(" font-family="sans-serif" font-size="12">)"
      << "\n";
    s << R"(<rect width="100%" height="100%" fill="white"/>)"
      << "\n";
    s << R"(<text x=")" << left + plot_w / 2 << R"(" y="22" text-anchor="middle" font-size="15">)"
      << escape(c.title) << "</text>\n";
    for (const double t : y_ticks) {
        const double y = py(t);
        s << R"(<line x1=")" << left << R"(" x2=")" << left + plot_w << R"(" y1=")" << y
          << R"(" y2=")" << y << R"(" stroke="#e4e4e4"/>)"
          << "\n";
        s << R"(<text x=")" << left - 6 << R"(" y=")" << y + 4 << R"(" text-anchor="end">)"
          << tick_label(t) << "</text>\n";
    }
    for (const double t : c.x_ticks) {
        const double x = px(t);
        s << R"(<line x1=")" << x << R"(" x2=")" << x << R"(" y1=")" << top << R"(" y2=")"
          << top + plot_h << R"(" stroke="#e4e4e4"/>)"
          << "\n";
        s << R"(<text x=")" << x << R"(" y=")" << top + plot_h + 18 << R"(" text-anchor="middle">)"
          << tick_label(t) << "</text>\n";
    }
    s << R"(<rect x=")" << left << R"(" y=")" << top << R"(" width=")" << plot_w << R"(" height=")"
      << plot_h << R"(" fill="none" stroke="#888"/>)"
      << "\n";
    s << R"(<text x=")" << left + plot_w / 2 << R"(" y=")" << height - 16
      << R"(" text-anchor="middle">)" << escape(c.x_label) << "</text>\n";
    s << R"(<text transform="translate(18,)" << top + plot_h / 2
      << R"svg() rotate(-90)" text-anchor="middle">)svg" << escape(c.y_label) << "</text>\n";

    double legend_y = top + 10;
    for (const auto& line : c.lines) {
        std::string path;
        for (const auto& [x, y] : line.points) {
            if (c.y_log && y <= 0) continue;
            path += (path.empty() ? "M" : " L") + fixed(px(x), 1) + "," + fixed(py(y), 1);
        }
        const std::string dash = line.dashed ? R"( stroke-dasharray="6,4")" : "";
        if (!line.markers_only) {
            s << R"(<path d=")" << path << R"(" fill="none" stroke=")" << line.color
              << R"(" stroke-width="2")" << dash << "/>\n";
        }
        for (const auto& [x, y] : line.points) {
            if (c.y_log && y <= 0) continue;
            s << R"(<circle cx=")" << fixed(px(x), 1) << R"(" cy=")" << fixed(py(y), 1)
              << R"(" r=")" << (line.markers_only ? 5 : 3) << R"(" fill=")" << line.color
              << R"("/>)"
              << "\n";
        }
        const double lx = left + plot_w + 14;
        if (line.markers_only) {
            s << R"(<circle cx=")" << lx + 12 << R"(" cy=")" << legend_y << R"(" r="5" fill=")"
              << line.color << R"("/>)"
              << "\n";
        } else {
            s << R"(<line x1=")" << lx << R"(" x2=")" << lx + 24 << R"(" y1=")" << legend_y
              << R"(" y2=")" << legend_y << R"(" stroke=")" << line.color << R"(" stroke-width="2")"
              << dash << "/>\n";
        }
        s << R"(<text x=")" << lx + 30 << R"(" y=")" << legend_y + 4 << R"(">)" << escape(line.name)
          << "</text>\n";
        legend_y += 20;
    }
    s << "</svg>\n";
    return s.str();
}

}  // namespace redlock::bench
