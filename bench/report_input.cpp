// Reads bench/run.sh's results directory: JSON files (Google Benchmark's NaNs made null) and TSVs.
#include "report_input.hpp"

#include <fstream>
#include <sstream>

namespace redlock::bench {

namespace fs = std::filesystem;

namespace {

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

}  // namespace

auto read_text(const fs::path& file) -> std::string {
    std::ifstream in{file};
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

auto read_results(const fs::path& dir, std::string& problem) -> std::optional<results> {
    results r;
    for (const auto& entry : fs::directory_iterator{dir}) {
        const fs::path p = entry.path();
        if (p.extension() != ".json") continue;
        auto j = read_json(p);
        if (!j) {
            problem = "cannot parse " + p.string() + "\n";
            return std::nullopt;
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
        problem = "no load results in " + dir.string() + "\n";
        return std::nullopt;
    }
    return r;
}

auto field(const json* measurement, const char* key) -> double {
    return measurement != nullptr && measurement->contains(key) ? (*measurement)[key].get<double>()
                                                                : 0.0;
}

auto percentile(const json* measurement, const char* which, const char* pct) -> double {
    return measurement != nullptr && measurement->contains(which)
               ? (*measurement)[which][pct].get<double>()
               : 0.0;
}

auto label_of(int concurrency) -> std::string {
    std::string label = "c";  // not "c" + std::string&&: GCC 12 -Wrestrict misfires on it
    label += std::to_string(concurrency);
    return label;
}

}  // namespace redlock::bench
