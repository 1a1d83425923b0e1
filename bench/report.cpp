// redlock_bench_report: turns what bench/run.sh measured (a directory of
// JSON files) into docs/benchmarks.md and its SVG plots. The prose lives in
// bench/benchmarks.md.in; every {{name}} in it is replaced by a table or a
// figure computed here, and an unknown name is an error, so the template and
// this tool cannot drift apart silently.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// ---- input ------------------------------------------------------------------------------------

auto read_text(const fs::path& file) -> std::string {
    std::ifstream in{file};
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

auto read_json(const fs::path& file) -> std::optional<json> {
    std::string text = read_text(file);
    if (text.empty()) return std::nullopt;
    // Google Benchmark writes NaN and inf (the spread of an all-zero counter),
    // which JSON has no words for.
    for (const std::string bad : {"-nan", "nan", "NaN", "-inf", "inf"}) {
        const std::string token = ": " + bad;
        for (std::size_t at = 0; (at = text.find(token, at)) != std::string::npos;) {
            const std::size_t end = at + token.size();
            if (end < text.size() && (text[end] == ',' || text[end] == '\n' || text[end] == ' ')) {
                text.replace(at, token.size(), ": null");
            } else {
                at = end;
            }
        }
    }
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

/// Every load run, by its label.
struct results {
    std::map<std::string, json> runs;
    json meta;
    json micro;
    json callgrind;
    std::string callgrind_lib;  // per-cycle exclusive instructions per function (TSV)
    std::string callgrind_raw;
    std::string callgrind_lib_inclusive;
    std::string callgrind_raw_inclusive;
    std::string callgrind_lib_allocs;  // allocations per cycle by call site (TSV)

    [[nodiscard]] auto run(const std::string& label) const -> const json* {
        const auto it = runs.find(label);
        return it == runs.end() ? nullptr : &it->second;
    }
    /// results.<mode> of a run, if both exist.
    [[nodiscard]] auto mode(const std::string& label, const std::string& m) const -> const json* {
        const json* r = run(label);
        if (r == nullptr || !r->contains("results") || !(*r)["results"].contains(m)) return nullptr;
        return &(*r)["results"][m];
    }
};

// ---- formatting -------------------------------------------------------------------------------

auto fixed(double v, int decimals) -> std::string {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

/// Three significant digits, for latencies and per-lock figures.
auto sig3(double v) -> std::string {
    if (v == 0) return "0";
    const double a = std::fabs(v);
    if (a >= 100) return fixed(v, 0);
    if (a >= 10) return fixed(v, 1);
    if (a >= 1) return fixed(v, 2);
    if (a >= 0.1) return fixed(v, 3);
    return fixed(v, 4);
}

/// Thousands separated by a thin space: 36 395.
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

/// `text` as inline code. (Not "`" + std::string&&: GCC 12's -Wrestrict misfires on it.)
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

auto ms(const json& ns) -> std::string {
    return sig3(ns.get<double>() / 1e6);
}

auto ratio(double a, double b) -> std::string {
    return b > 0 ? fixed(a / b, 2) : "–";
}

auto num(const json* j, const char* key) -> double {
    return j != nullptr && j->contains(key) ? (*j)[key].get<double>() : 0.0;
}

auto lat(const json* j, const char* which, const char* pct) -> double {
    return j != nullptr && j->contains(which) ? (*j)[which][pct].get<double>() : 0.0;
}

class table {
public:
    /// `align`: one letter per column, 'l' or 'r'; by default the first column
    /// is left-aligned and the others (numbers) right-aligned.
    explicit table(std::vector<std::string> header, std::string align = {})
        : header_{std::move(header)}, align_{std::move(align)} {}
    void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
    [[nodiscard]] auto empty() const noexcept -> bool { return rows_.empty(); }
    [[nodiscard]] auto str() const -> std::string {
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

private:
    std::vector<std::string> header_;
    std::string align_;
    std::vector<std::vector<std::string>> rows_;
};

// ---- SVG line charts ----------------------------------------------------------------------------

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

// ---- the document -------------------------------------------------------------------------------

const std::vector<int> concurrencies{1, 16, 64, 256, 1024};

auto label_of(int c) -> std::string {
    std::string label = "c";  // not "c" + std::string&&: GCC 12 -Wrestrict misfires on it
    label += std::to_string(c);
    return label;
}

class report {
public:
    explicit report(results r) : r_{std::move(r)} {}

    /// The value of placeholder `name`, or nullopt if there is no such placeholder.
    [[nodiscard]] auto value(const std::string& name) const -> std::optional<std::string> {
        const auto it = scalars().find(name);
        if (it != scalars().end()) return it->second;
        // {{incl_lib:name}}: inclusive instructions per cycle of the first
        // function whose name contains `name`; {{pct_lib:name}}: its share.
        for (const auto& [prefix, tsv] :
             {std::pair{std::string{"incl_lib:"}, &r_.callgrind_lib_inclusive},
              std::pair{std::string{"incl_raw:"}, &r_.callgrind_raw_inclusive},
              std::pair{std::string{"pct_lib:"}, &r_.callgrind_lib_inclusive}}) {
            if (!name.starts_with(prefix)) continue;
            const double v = per_cycle_of(*tsv, name.substr(prefix.size()));
            if (v < 0) return "?";
            if (prefix == "pct_lib:")
                return fixed(100 * v / std::max(instructions("lib"), 1.0), 0) + " %";
            return count(v);
        }
        if (name == "targets") return targets();
        if (name == "uncontended") return uncontended();
        if (name == "costs") return costs();
        if (name == "peer") return peer();
        if (name == "variants") return variants();
        if (name == "nodes") return nodes();
        if (name == "contended") return contended();
        if (name == "client_memory") return memory();
        if (name == "callgrind") return callgrind();
        if (name == "callgrind_top") return callgrind_top();
        if (name == "micro") return micro();
        if (name == "alloc_sites") return alloc_sites();
        if (name == "errors") return errors();
        if (name == "commands") return commands();
        return std::nullopt;
    }

    [[nodiscard]] auto throughput_svg() const -> std::string {
        chart c{"Locks per second (acquire + release) by locks in flight",
                "locks in flight (distinct resources, one client)",
                "completed cycles per second",
                false,
                {1, 4, 16, 64, 256, 1024},
                {}};
        c.lines.push_back(line("library", "#1f77b4", false, "lib", "ops_per_s"));
        c.lines.push_back(line("raw ceiling (epoll)", "#d62728", true, "raw", "ops_per_s"));
        c.lines.push_back(
            line("hiredis async + libuv", "#7f7f7f", true, "raw-hiredis", "ops_per_s"));
        c.lines.back().markers_only = true;
        return render(c);
    }

    [[nodiscard]] auto latency_svg() const -> std::string {
        chart c{"Acquire + release latency by locks in flight",
                "locks in flight (distinct resources, one client)",
                "milliseconds (log scale)",
                true,
                {1, 4, 16, 64, 256, 1024},
                {}};
        const std::pair<const char*, const char*> pcts[] = {
            {"p50", "#1f77b4"}, {"p90", "#2ca02c"}, {"p99", "#ff7f0e"}, {"p999", "#9467bd"}};
        for (const auto& [p, color] : pcts) {
            c.lines.push_back(latency_line(std::string{"library "} + p, color, false, "lib", p));
        }
        for (const auto& [p, color] : pcts) {
            if (std::string{p} == "p90" || std::string{p} == "p999") continue;
            c.lines.push_back(latency_line(std::string{"raw "} + p, color, true, "raw", p));
        }
        return render(c);
    }

private:
    [[nodiscard]] auto line(std::string name, std::string color, bool dashed, const char* mode,
                            const char* key) const -> series {
        series s{std::move(name), std::move(color), dashed, {}};
        for (const int c : concurrencies) {
            if (const json* m = r_.mode(label_of(c), mode)) s.points.emplace_back(c, num(m, key));
        }
        return s;
    }
    [[nodiscard]] auto latency_line(std::string name, std::string color, bool dashed,
                                    const char* mode, const char* pct) const -> series {
        series s{std::move(name), std::move(color), dashed, {}};
        for (const int c : concurrencies) {
            if (const json* m = r_.mode(label_of(c), mode))
                s.points.emplace_back(c, lat(m, "latency_ns", pct) / 1e6);
        }
        return s;
    }

    [[nodiscard]] auto command_of(const std::string& label) const -> std::string {
        const json* r = r_.run(label);
        if (r == nullptr) return "–";
        // The command as a reader would type it: without --label and --json.
        std::istringstream words{(*r)["command"].get<std::string>()};
        std::string word;
        std::string shown = "build/bench-release/bench/redlock_load";
        words >> word;  // the program
        while (words >> word) {
            if (word == "--label" || word == "--json") {
                words >> word;
                continue;
            }
            shown += " " + word;
        }
        return code(shown);
    }

    // -- the targets of issue 4 --

    [[nodiscard]] auto instructions(const char* mode) const -> double {
        if (r_.callgrind.is_null() || !r_.callgrind.contains(mode)) return 0;
        return r_.callgrind[mode]["per_cycle"].get<double>();
    }

    /// Instructions per cycle of the first function in `tsv` whose name contains `part`.
    static auto per_cycle_of(const std::string& tsv, const std::string& part) -> double {
        std::istringstream in{tsv};
        std::string line;
        while (std::getline(in, line)) {
            const auto tab = line.find('\t');
            if (tab != std::string::npos && line.find(part, tab) != std::string::npos)
                return std::stod(line.substr(0, tab));
        }
        return -1;
    }

    [[nodiscard]] auto best_lib_throughput() const -> std::pair<double, int> {
        std::pair<double, int> best{0, 0};
        for (const int c : concurrencies) {
            const double v = num(r_.mode(label_of(c), "lib"), "ops_per_s");
            if (v > best.first) best = {v, c};
        }
        return best;
    }

    [[nodiscard]] auto targets() const -> std::string {
        table t{{"Target", "Goal", "Measured", "Verdict", "Reproduce"}, "lllll"};
        const auto verdict = [](bool met) { return met ? "met" : "**missed**"; };
        if (const json* lib = r_.mode("c1", "lib"); lib != nullptr) {
            const json* raw = r_.mode("c1", "raw");
            const double a = lat(lib, "latency_ns", "p50");
            const double b = lat(raw, "latency_ns", "p50");
            t.row({"1 in flight: library p50 ÷ raw floor p50", "≤ 1.15",
                   ratio(a, b) + " (" + sig3(a / 1e6) + " vs " + sig3(b / 1e6) + " ms)",
                   verdict(b > 0 && a / b <= 1.15), command_of("c1")});
        }
        for (const int c : {64, 256}) {
            const json* lib = r_.mode(label_of(c), "lib");
            const json* raw = r_.mode(label_of(c), "raw");
            if (lib == nullptr || raw == nullptr) continue;
            const double a = num(lib, "ops_per_s");
            const double b = num(raw, "ops_per_s");
            t.row({std::to_string(c) + " in flight: library ÷ raw throughput", "≥ 0.50",
                   ratio(a, b) + " (" + count(a) + " vs " + count(b) + " locks/s)",
                   verdict(b > 0 && a / b >= 0.5), command_of(label_of(c))});
        }
        if (const json* lib = r_.mode("c1024", "lib"); lib != nullptr) {
            const auto [best, at] = best_lib_throughput();
            const double a = num(lib, "ops_per_s");
            t.row({"1024 in flight: throughput ÷ the library's best", "≥ 0.90",
                   ratio(a, best) + " (" + count(a) + " vs " + count(best) + " at " +
                       std::to_string(at) + ")",
                   verdict(best > 0 && a / best >= 0.9), command_of("c1024")});
        }
        if (const json* mem = r_.mode("mem-lib-c1024", "lib"); mem != nullptr) {
            const double per = num(mem, "rss_bytes_per_in_flight");
            const double heap = num(mem, "heap_bytes_per_in_flight");
            t.row({"client memory per in-flight lock (RSS, 1024 in flight vs idle)", "≤ 1024 B",
                   count(per) + " B (heap in use: " + count(heap) + " B)", verdict(per <= 1024),
                   command_of("mem-lib-c1024")});
        }
        if (const double lib = instructions("lib"), raw = instructions("raw"); lib > 0 && raw > 0) {
            t.row({"client instructions per cycle: library ÷ raw (callgrind)", "≤ 1.50",
                   ratio(lib, raw) + " (" + count(lib) + " vs " + count(raw) + ")",
                   verdict(lib / raw <= 1.5), code(r_.callgrind["command"].get<std::string>())});
        }
        return t.str();
    }

    // -- tables --

    [[nodiscard]] auto uncontended() const -> std::string {
        table t{{"In flight", "Library locks/s", "Raw locks/s", "Lib ÷ raw",
                 "Library p50 / p90 / p99 / p99.9 ms", "Raw p50 / p90 / p99 / p99.9 ms",
                 "p50 ratio"}};
        const auto pcts = [](const json* m) {
            const json& l = (*m)["latency_ns"];
            return ms(l["p50"]) + " / " + ms(l["p90"]) + " / " + ms(l["p99"]) + " / " +
                   ms(l["p999"]);
        };
        for (const int c : concurrencies) {
            const json* lib = r_.mode(label_of(c), "lib");
            const json* raw = r_.mode(label_of(c), "raw");
            if (lib == nullptr || raw == nullptr) continue;
            t.row({std::to_string(c), count(num(lib, "ops_per_s")), count(num(raw, "ops_per_s")),
                   ratio(num(lib, "ops_per_s"), num(raw, "ops_per_s")), pcts(lib), pcts(raw),
                   ratio(lat(lib, "latency_ns", "p50"), lat(raw, "latency_ns", "p50"))});
        }
        return t.str();
    }

    [[nodiscard]] auto costs() const -> std::string {
        table t{{"In flight", "Client CPU µs/lock (lib / raw)", "Servers' CPU µs/lock (lib / raw)",
                 "Allocations/lock (lib / raw)", "Socket writes/lock (lib / raw)",
                 "Commands/lock (lib / raw)"}};
        const auto pair = [](const json* a, const json* b, const char* key) {
            return sig3(num(a, key)) + " / " + sig3(num(b, key));
        };
        for (const int c : concurrencies) {
            const json* lib = r_.mode(label_of(c), "lib");
            const json* raw = r_.mode(label_of(c), "raw");
            if (lib == nullptr || raw == nullptr) continue;
            t.row({std::to_string(c), pair(lib, raw, "client_cpu_us_per_lock"),
                   pair(lib, raw, "server_cpu_us_per_lock"), pair(lib, raw, "allocs_per_lock"),
                   pair(lib, raw, "socket_writes_per_lock"), pair(lib, raw, "commands_per_lock")});
        }
        return t.str();
    }

    [[nodiscard]] auto peer() const -> std::string {
        table t{{"In flight", "hiredis async locks/s", "p50 / p99 ms", "Client CPU µs/lock",
                 "Allocations/lock", "Library ÷ hiredis async (locks/s)"}};
        for (const int c : concurrencies) {
            const json* peer = r_.mode(label_of(c), "raw-hiredis");
            const json* lib = r_.mode(label_of(c), "lib");
            if (peer == nullptr) continue;
            t.row({std::to_string(c), count(num(peer, "ops_per_s")),
                   ms((*peer)["latency_ns"]["p50"]) + " / " + ms((*peer)["latency_ns"]["p99"]),
                   sig3(num(peer, "client_cpu_us_per_lock")), sig3(num(peer, "allocs_per_lock")),
                   ratio(num(lib, "ops_per_s"), num(peer, "ops_per_s"))});
        }
        return t.empty() ? "(not measured in this run)\n" : t.str();
    }

    void comparison_row(table& t, const std::string& first, const std::string& label, int c) const {
        const json* lib = r_.mode(label, "lib");
        const json* raw = r_.mode(label, "raw");
        if (lib == nullptr || raw == nullptr) return;
        t.row({first, std::to_string(c), count(num(lib, "ops_per_s")), count(num(raw, "ops_per_s")),
               ratio(num(lib, "ops_per_s"), num(raw, "ops_per_s")),
               ms((*lib)["latency_ns"]["p50"]) + " / " + ms((*lib)["latency_ns"]["p99"]),
               ms((*raw)["latency_ns"]["p50"]),
               ratio(lat(lib, "latency_ns", "p50"), lat(raw, "latency_ns", "p50")),
               sig3(num(lib, "commands_per_lock")) + " (" + sig3(num(lib, "redis_calls_per_lock")) +
                   ")",
               sig3(num(lib, "client_cpu_us_per_lock")) + " / " +
                   sig3(num(lib, "server_cpu_us_per_lock"))});
    }

    [[nodiscard]] auto variants() const -> std::string {
        table t{{"Cycle", "In flight", "Library locks/s", "Raw locks/s", "Lib ÷ raw",
                 "Library p50 / p99 ms", "Raw p50 ms", "p50 ratio",
                 "Commands/lock (with script calls)", "CPU µs/lock: client / all servers"}};
        for (const int c : {1, 64}) comparison_row(t, "plain", label_of(c), c);
        for (const int c : {1, 64}) comparison_row(t, "fencing", "fencing-" + label_of(c), c);
        for (const int c : {1, 64}) comparison_row(t, "extend", "extend-" + label_of(c), c);
        return t.str();
    }

    [[nodiscard]] auto nodes() const -> std::string {
        table t{{"Nodes", "In flight", "Library locks/s", "Raw locks/s", "Lib ÷ raw",
                 "Library p50 / p99 ms", "Raw p50 ms", "p50 ratio",
                 "Commands/lock (with script calls)", "CPU µs/lock: client / all servers"}};
        for (const int n : {3, 5, 7}) {
            for (const int c : {1, 64}) {
                std::string label = label_of(c);
                if (n != 5) label.insert(0, std::string{"n"} + std::to_string(n) + "-");
                comparison_row(t, std::to_string(n), label, c);
            }
        }
        return t.str();
    }

    [[nodiscard]] auto contended() const -> std::string {
        table t{{"Workers", "Waiting", "Hold ms", "Locks/s", "Lock held (% of time)",
                 "Wait to acquire p50 / p99 / max ms", "Gave up (contended)",
                 "Busiest / idlest worker share", "Commands per lock"},
                "llrrrrrrr"};
        std::vector<const json*> runs;
        for (const auto& [label, run] : r_.runs) {
            if (run["workload"] == "contended") runs.push_back(&run);
        }
        std::sort(runs.begin(), runs.end(), [](const json* a, const json* b) {
            return std::pair{(*a)["concurrency"].get<int>(), a->value("max_wait_ms", 0)} <
                   std::pair{(*b)["concurrency"].get<int>(), b->value("max_wait_ms", 0)};
        });
        for (const json* each : runs) {
            const json& run = *each;
            const json& lib = run["results"]["lib"];
            const double hold = run["hold_ms"].get<double>();
            const double held = lib["ops_per_s"].get<double>() * hold / 1000 * 100;
            const std::uint64_t gave_up =
                lib["errors"].contains("acquire:contended")
                    ? lib["errors"]["acquire:contended"].get<std::uint64_t>()
                    : 0;
            const int max_wait = run.value("max_wait_ms", 0);
            t.row({std::to_string(run["concurrency"].get<int>()),
                   max_wait == 0 ? "retry policy" : "max_wait " + std::to_string(max_wait) + " ms",
                   fixed(hold, 0), count(lib["ops_per_s"].get<double>()), fixed(held, 0) + " %",
                   ms(lib["acquire_latency_ns"]["p50"]) + " / " +
                       ms(lib["acquire_latency_ns"]["p99"]) + " / " +
                       ms(lib["acquire_latency_ns"]["max"]),
                   count(static_cast<double>(gave_up)),
                   fixed(lib.value("busiest_worker_share", 0.0) * 100, 0) + " % / " +
                       fixed(lib.value("idlest_worker_share", 0.0) * 100, 0) + " %",
                   sig3(lib["commands_per_lock"].get<double>())});
        }
        return t.str();
    }

    [[nodiscard]] auto memory() const -> std::string {
        table t{{"Client", "In flight", "RSS idle (connected) KiB", "RSS peak KiB",
                 "(RSS peak − idle) ÷ in flight, bytes", "(heap peak − idle) ÷ in flight, bytes"}};
        for (const auto& [label, mode, c] : std::vector<std::tuple<std::string, std::string, int>>{
                 {"mem-lib-c1", "lib", 1},
                 {"mem-lib-c1024", "lib", 1024},
                 {"mem-raw-c1024", "raw", 1024}}) {
            const json* m = r_.mode(label, mode);
            if (m == nullptr) continue;
            t.row({mode == "lib" ? "library" : "raw", std::to_string(c),
                   count(num(m, "rss_before_kib")), count(num(m, "rss_peak_kib")),
                   count(num(m, "rss_bytes_per_in_flight")),
                   m->contains("heap_bytes_per_in_flight")
                       ? count(num(m, "heap_bytes_per_in_flight"))
                       : "–"});
        }
        return t.str();
    }

    [[nodiscard]] auto callgrind() const -> std::string {
        if (r_.callgrind.is_null()) return "(not measured in this run)\n";
        table t{{"Client",
                 "Instructions, " + std::to_string(r_.callgrind["small"].get<int>()) + " cycles",
                 "Instructions, " + std::to_string(r_.callgrind["big"].get<int>()) + " cycles",
                 "Per acquire + release cycle"}};
        for (const auto& [mode, name] :
             {std::pair{"lib", "library"},
              std::pair{"raw", "raw (the ceiling: hiredis's formatter)"},
              std::pair{"raw_resp", "raw with the library's RESP encoder (reference)"}}) {
            if (!r_.callgrind.contains(mode)) continue;
            const json& m = r_.callgrind[mode];
            t.row({name, count(m["ir_small"]), count(m["ir_big"]), count(m["per_cycle"])});
        }
        t.row({"library ÷ raw (the target)", "", "",
               ratio(instructions("lib"), instructions("raw"))});
        if (instructions("raw_resp") > 0) {
            t.row({"library ÷ raw with the same encoder", "", "",
                   ratio(instructions("lib"), instructions("raw_resp"))});
        }
        return t.str();
    }

    /// "file:function [object]" as callgrind_annotate prints it, shortened
    /// to the function's name (arguments and templates elided) and object.
    static auto short_name(std::string s) -> std::string {
        std::string object;
        if (const auto at = s.rfind(" ["); at != std::string::npos && s.back() == ']') {
            object = fs::path{s.substr(at + 2, s.size() - at - 3)}.filename().string();
            s.resize(at);
        }
        // Drop "???:" or "path/file.c:".
        if (s.starts_with("???:")) {
            s.erase(0, 4);
        } else if (const auto colon = s.find(':');
                   colon != std::string::npos && s.find('/') < colon) {
            s.erase(0, colon + 1);
        }
        for (std::size_t at; (at = s.find("[abi:cxx11]")) != std::string::npos;) s.erase(at, 11);
        // A std::function's invoker: name the function whose lambda it runs.
        if (s.starts_with("std::_Function_handler<") && s.find("::{lambda") != std::string::npos) {
            const std::size_t from = s.find(", ", s.find(')')) + 2;
            const std::size_t to = s.find('(', from);
            if (from != std::string::npos + 2 && to != std::string::npos)
                return "lambda in " + s.substr(from, to - from) + ", run by std::function" +
                       (object.empty() ? "" : " — " + object);
        }
        std::string out;
        int depth = 0;
        for (std::size_t i = 0; i < s.size(); ++i) {
            const char ch = s[i];
            if (ch == '(' && depth == 0 && !out.ends_with("operator") &&
                !out.ends_with("{lambda")) {
                break;
            }
            if (ch == '<') {
                if (depth++ == 0) out += "<…>";
                continue;
            }
            if (ch == '>' && depth > 0) {
                --depth;
                continue;
            }
            if (depth == 0) out += ch;
        }
        if (out.starts_with("0x")) out = "(" + object + " internal)";
        return out + (object.empty() ? "" : " — " + object);
    }

    [[nodiscard]] auto top_table(const std::string& tsv, std::size_t rows) const -> std::string {
        table t{{"Instructions per cycle", "Function — object"}, "rl"};
        std::istringstream in{tsv};
        std::string line;
        std::size_t n = 0;
        while (n < rows && std::getline(in, line)) {
            const auto tab = line.find('\t');
            if (tab == std::string::npos) continue;
            const std::string name = line.substr(tab + 1);
            if (name.find("PROGRAM TOTALS") != std::string::npos) continue;
            std::string shown = short_name(name);
            t.row({count(std::stod(line.substr(0, tab))), code(shown)});
            ++n;
        }
        return t.str();
    }

    [[nodiscard]] auto callgrind_top() const -> std::string {
        if (r_.callgrind_lib.empty()) return "(not measured in this run)\n";
        return "Library, exclusive instructions per cycle:\n\n" + top_table(r_.callgrind_lib, 20) +
               "\nRaw ceiling, exclusive instructions per cycle:\n\n" +
               top_table(r_.callgrind_raw, 10);
    }

    [[nodiscard]] auto alloc_sites() const -> std::string {
        if (r_.callgrind_lib_allocs.empty()) return "(not measured in this run)\n";
        table t{{"Allocations per cycle", "Call site — object", "Allocator"}, "rll"};
        std::istringstream in{r_.callgrind_lib_allocs};
        std::string line;
        double total = 0;
        while (std::getline(in, line)) {
            const auto a = line.find('\t');
            const auto b = line.find('\t', a + 1);
            if (a == std::string::npos || b == std::string::npos) continue;
            const double n = std::stod(line.substr(0, a));
            total += n;
            std::string site = short_name(line.substr(a + 1, b - a - 1));
            if (site.find("hiredis") != std::string::npos && site.starts_with("("))
                site = "hiredis redisReader (reply objects) — libhiredis.so";
            t.row({fixed(n, n == std::floor(n) ? 0 : 2), code(site), line.substr(b + 1)});
        }
        t.row({fixed(total, 1), "total", ""});
        return t.str();
    }

    [[nodiscard]] auto micro() const -> std::string {
        if (r_.micro.is_null()) return "(not measured in this run)\n";
        table t{{"Benchmark", "CPU ns/op (median)", "Allocations/op"}, "lrr"};
        for (const auto& b : r_.micro["benchmarks"]) {
            if (b.value("aggregate_name", "") != "median") continue;
            std::string name = b["run_name"].get<std::string>();
            const double allocs = b.contains("allocs") ? b["allocs"].get<double>() : 0.0;
            t.row({code(name), sig3(b["cpu_time"].get<double>()),
                   allocs < 0.01 ? "0" : sig3(allocs)});
        }
        return t.str();
    }

    [[nodiscard]] auto errors() const -> std::string {
        std::string out;
        for (const auto& [label, run] : r_.runs) {
            for (const auto& [mode, res] : run["results"].items()) {
                for (const auto& [kind, n] : res["errors"].items()) {
                    if (run["workload"] == "contended" && kind == "acquire:contended") continue;
                    out += "- " + code(label) + " " + mode + ": " + kind + " × " +
                           count(n.get<double>()) + " (in a run of " +
                           count(res["completed"].get<double>()) + " locks)\n";
                }
            }
        }
        return out.empty() ? "None: every cycle of every run completed without an error.\n" : out;
    }

    [[nodiscard]] auto commands() const -> std::string {
        table t{{"Cycle", "Commands the library sent, per lock", "Redis calls, per lock"}, "lrl"};
        for (const auto& [name, label] : std::vector<std::pair<std::string, std::string>>{
                 {"plain", "c64"}, {"fencing", "fencing-c64"}, {"extend", "extend-c64"}}) {
            const json* lib = r_.mode(label, "lib");
            if (lib == nullptr) continue;
            std::string calls;
            for (const auto& [cmd, n] : (*lib)["redis_commands"].items()) {
                if (!calls.empty()) calls += ", ";
                calls += cmd + " " + sig3(n.get<double>() / num(lib, "completed"));
            }
            t.row({name, sig3(num(lib, "commands_per_lock")), calls});
        }
        return t.str();
    }

    // -- single figures for the prose --

    [[nodiscard]] auto scalars() const -> const std::map<std::string, std::string>& {
        if (!scalars_.empty()) return scalars_;
        auto& s = scalars_;
        const json& m = r_.meta;
        for (const char* key : {"date", "machine", "cpu", "cores", "memory", "kernel", "compiler",
                                "redis_version", "commit", "duration"}) {
            s[key] = m.contains(key) ? m[key].get<std::string>() : "?";
        }
        double lo = 1e9;
        double hi = 0;
        for (const auto& [label, run] : r_.runs) {
            for (const char* k : {"load_average_before", "load_average_after"}) {
                lo = std::min(lo, run[k].get<double>());
                hi = std::max(hi, run[k].get<double>());
            }
        }
        s["load_range"] = fixed(lo, 1) + "–" + fixed(hi, 1);
        const auto from = [&](const std::string& label, const char* mode, const char* which,
                              const char* pct) {
            return sig3(lat(r_.mode(label, mode), which, pct) / 1e6);
        };
        for (const int c : concurrencies) {
            const std::string l = label_of(c);
            for (const char* p : {"p50", "p99", "p999", "max"}) {
                s[l + "_lib_acquire_" + p + "_ms"] = from(l, "lib", "acquire_latency_ns", p);
                s[l + "_lib_cycle_" + p + "_ms"] = from(l, "lib", "latency_ns", p);
                s[l + "_raw_cycle_" + p + "_ms"] = from(l, "raw", "latency_ns", p);
            }
            for (const char* mode : {"lib", "raw"}) {
                const json* run = r_.mode(l, mode);
                const std::string p = l + "_" + mode + "_";
                s[p + "ops"] = count(num(run, "ops_per_s"));
                s[p + "allocs"] = sig3(num(run, "allocs_per_lock"));
                s[p + "cpu"] = sig3(num(run, "client_cpu_us_per_lock"));
                s[p + "server_cpu"] = sig3(num(run, "server_cpu_us_per_lock"));
            }
        }
        const json* c1 = r_.run("c1");
        s["request_timeout_ms"] =
            c1 != nullptr ? std::to_string((*c1)["request_timeout_ms"].get<int>()) : "?";
        s["lib_ir"] = count(instructions("lib"));
        s["raw_ir"] = count(instructions("raw"));
        s["ir_ratio"] = ratio(instructions("lib"), instructions("raw"));
        s["raw_resp_ir"] = count(instructions("raw_resp"));
        s["ir_ratio_same_encoder"] = ratio(instructions("lib"), instructions("raw_resp"));
        const auto micro_ns = [&](const std::string& name) -> std::string {
            if (r_.micro.is_null()) return "?";
            for (const auto& b : r_.micro["benchmarks"]) {
                if (b.value("aggregate_name", "") == "median" && b["run_name"] == name)
                    return sig3(b["cpu_time"].get<double>());
            }
            return "?";
        };
        s["encode_set_ns"] = micro_ns("encode_set");
        s["encode_hiredis_ns"] = micro_ns("encode_set_hiredis_reference");
        s["lock_value_ns"] = micro_ns("lock_value_generation");
        s["config_ns"] = micro_ns("config_loading");
        const json* mem = r_.mode("mem-lib-c1024", "lib");
        s["mem_per_lock"] = count(num(mem, "rss_bytes_per_in_flight"));
        s["heap_per_lock"] = count(num(mem, "heap_bytes_per_in_flight"));
        const json* raw_mem = r_.mode("mem-raw-c1024", "raw");
        s["raw_heap_per_lock"] = count(num(raw_mem, "heap_bytes_per_in_flight"));
        const auto [best, at] = best_lib_throughput();
        s["c1024_share_of_best"] =
            fixed(100 * num(r_.mode("c1024", "lib"), "ops_per_s") / std::max(best, 1.0), 0) + " %";
        return scalars_;
    }

    results r_;
    mutable std::map<std::string, std::string> scalars_;
};

auto fill(const std::string& text, const report& rep, std::string& problem) -> std::string {
    std::string out;
    std::size_t at = 0;
    while (true) {
        const std::size_t open = text.find("{{", at);
        if (open == std::string::npos) break;
        const std::size_t close = text.find("}}", open);
        if (close == std::string::npos) break;
        out.append(text, at, open - at);
        const std::string name = text.substr(open + 2, close - open - 2);
        if (auto v = rep.value(name)) {
            // A block that ends a paragraph keeps exactly one newline.
            if (!v->empty() && v->back() == '\n' && text.compare(close + 2, 1, "\n") == 0)
                v->pop_back();
            out += *v;
        } else {
            problem += "unknown placeholder {{" + name + "}}\n";
        }
        at = close + 2;
    }
    out.append(text, at);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr,
                     "usage: %s RESULTS_DIR TEMPLATE OUTPUT.md SVG_DIR\n"
                     "  RESULTS_DIR holds meta.json, micro.json, callgrind.json, "
                     "callgrind-{lib,raw}.tsv and one JSON file per load run\n",
                     argv[0]);
        return 64;
    }
    const fs::path dir{argv[1]};
    results r;
    for (const auto& entry : fs::directory_iterator{dir}) {
        const fs::path p = entry.path();
        if (p.extension() != ".json") continue;
        auto j = read_json(p);
        if (!j) {
            std::fprintf(stderr, "report: cannot parse %s\n", p.c_str());
            return 65;
        }
        const std::string stem = p.stem().string();
        if (stem == "meta") {
            r.meta = *j;
        } else if (stem == "micro") {
            r.micro = *j;
        } else if (stem == "callgrind") {
            r.callgrind = *j;
        } else if (j->contains("label")) {
            r.runs[(*j)["label"].get<std::string>()] = *j;
        }
    }
    r.callgrind_lib = read_text(dir / "callgrind-lib.tsv");
    r.callgrind_raw = read_text(dir / "callgrind-raw.tsv");
    r.callgrind_lib_inclusive = read_text(dir / "callgrind-lib-inclusive.tsv");
    r.callgrind_raw_inclusive = read_text(dir / "callgrind-raw-inclusive.tsv");
    r.callgrind_lib_allocs = read_text(dir / "callgrind-lib-allocs.tsv");
    if (r.runs.empty()) {
        std::fprintf(stderr, "report: no load results in %s\n", dir.c_str());
        return 65;
    }

    const report rep{std::move(r)};
    std::string problem;
    const std::string doc = fill(read_text(argv[2]), rep, problem);
    if (!problem.empty()) {
        std::fprintf(stderr, "report: %s", problem.c_str());
        return 65;
    }
    const fs::path svg_dir{argv[4]};
    fs::create_directories(svg_dir);
    const std::pair<const char*, std::string> files[] = {
        {argv[3], doc},
        {"throughput.svg", rep.throughput_svg()},
        {"latency.svg", rep.latency_svg()},
    };
    for (const auto& [name, content] : files) {
        const fs::path target =
            std::string{name} == argv[3] ? fs::path{name} : svg_dir / fs::path{name};
        std::ofstream out{target};
        out << content;
        if (!out) {
            std::fprintf(stderr, "report: cannot write %s\n", target.c_str());
            return 73;
        }
    }
    return 0;
}
