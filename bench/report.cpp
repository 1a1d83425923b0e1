// redlock_bench_report: turns what bench/run.sh measured (a directory of
// JSON files) into docs/benchmarks.md and its SVG plots. The prose lives in
// bench/benchmarks.md.in; every {{name}} in it is replaced by a table or a
// figure computed by this tool, and an unknown name is an error, so the
// template and this tool cannot drift apart silently. This file is the entry:
// report_input reads the results, report_placeholders fills the template
// (report_tables, report_callgrind), report_charts draws the SVG plots.
#include "report_charts.hpp"
#include "report_input.hpp"
#include "report_placeholders.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

namespace fs = std::filesystem;
using redlock::bench::fill;
using redlock::bench::latency_svg;
using redlock::bench::placeholders;
using redlock::bench::read_results;
using redlock::bench::read_text;
using redlock::bench::results;
using redlock::bench::throughput_svg;

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
    std::string problem;
    const std::optional<results> r = read_results(dir, problem);
    if (!r) {
        std::fprintf(stderr, "report: %s", problem.c_str());
        return 65;
    }

    const placeholders values{*r};
    const std::string doc = fill(read_text(argv[2]), values, problem);
    if (!problem.empty()) {
        std::fprintf(stderr, "report: %s", problem.c_str());
        return 65;
    }
    const fs::path svg_dir{argv[4]};
    fs::create_directories(svg_dir);
    const std::pair<const char*, std::string> files[] = {
        {argv[3], doc},
        {"throughput.svg", throughput_svg(*r)},
        {"latency.svg", latency_svg(*r)},
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
