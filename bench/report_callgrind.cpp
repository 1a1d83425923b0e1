// Builds the report's callgrind tables: instructions per cycle, top functions, allocation sites.
#include "report_callgrind.hpp"

#include "report_format.hpp"
#include "report_markdown_table.hpp"

#include <cmath>
#include <filesystem>
#include <sstream>
#include <utility>

namespace redlock::bench {

namespace fs = std::filesystem;

namespace {

/// "file:function [object]" as callgrind_annotate prints it, shortened
/// to the function's name (arguments and templates elided) and object.
auto short_name(std::string s) -> std::string {
    std::string object;
    if (const auto at = s.rfind(" ["); at != std::string::npos && s.back() == ']') {
        object = fs::path{s.substr(at + 2, s.size() - at - 3)}.filename().string();
        s.resize(at);
    }
    // Drop "???:" or "path/file.c:".
    if (s.starts_with("???:")) {
        s.erase(0, 4);
    } else if (const auto colon = s.find(':'); colon != std::string::npos && s.find('/') < colon) {
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
        if (ch == '(' && depth == 0 && !out.ends_with("operator") && !out.ends_with("{lambda")) {
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

/// The first `rows` functions of a callgrind_annotate TSV.
auto top_table(const std::string& tsv, std::size_t rows) -> std::string {
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

}  // namespace

auto instructions_per_cycle(const results& r, const char* mode) -> double {
    if (r.callgrind.is_null() || !r.callgrind.contains(mode)) return 0;
    return r.callgrind[mode]["per_cycle"].get<double>();
}

auto per_cycle_of(const std::string& tsv, const std::string& part) -> double {
    std::istringstream in{tsv};
    std::string line;
    while (std::getline(in, line)) {
        const auto tab = line.find('\t');
        if (tab != std::string::npos && line.find(part, tab) != std::string::npos)
            return std::stod(line.substr(0, tab));
    }
    return -1;
}

auto callgrind_table(const results& r) -> std::string {
    if (r.callgrind.is_null()) return "(not measured in this run)\n";
    table t{{"Client",
             "Instructions, " + std::to_string(r.callgrind["small"].get<int>()) + " cycles",
             "Instructions, " + std::to_string(r.callgrind["big"].get<int>()) + " cycles",
             "Per acquire + release cycle"}};
    for (const auto& [mode, name] :
         {std::pair{"lib", "library"}, std::pair{"raw", "raw (the ceiling: hiredis's formatter)"},
          std::pair{"raw_resp", "raw with the library's RESP encoder (reference)"}}) {
        if (!r.callgrind.contains(mode)) continue;
        const json& m = r.callgrind[mode];
        t.row({name, count(m["ir_small"]), count(m["ir_big"]), count(m["per_cycle"])});
    }
    t.row({"library ÷ raw (the target)", "", "",
           ratio(instructions_per_cycle(r, "lib"), instructions_per_cycle(r, "raw"))});
    if (instructions_per_cycle(r, "raw_resp") > 0) {
        t.row({"library ÷ raw with the same encoder", "", "",
               ratio(instructions_per_cycle(r, "lib"), instructions_per_cycle(r, "raw_resp"))});
    }
    return t.str();
}

auto callgrind_top_tables(const results& r) -> std::string {
    if (r.callgrind_lib.empty()) return "(not measured in this run)\n";
    return "Library, exclusive instructions per cycle:\n\n" + top_table(r.callgrind_lib, 20) +
           "\nRaw ceiling, exclusive instructions per cycle:\n\n" + top_table(r.callgrind_raw, 10);
}

auto alloc_sites_table(const results& r) -> std::string {
    if (r.callgrind_lib_allocs.empty()) return "(not measured in this run)\n";
    table t{{"Allocations per cycle", "Call site — object", "Allocator"}, "rll"};
    std::istringstream in{r.callgrind_lib_allocs};
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

}  // namespace redlock::bench
