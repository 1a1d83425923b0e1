// The report's input: bench/run.sh's results directory (JSON runs, callgrind TSVs) as `results`.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace redlock::bench {

using json = nlohmann::json;

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

/// The whole file, or "" if it cannot be read.
[[nodiscard]] auto read_text(const std::filesystem::path& file) -> std::string;

/// Every JSON and TSV file of `dir`. nullopt, with the reason in `problem`,
/// when a JSON file does not parse or there is no load run.
[[nodiscard]] auto read_results(const std::filesystem::path& dir, std::string& problem)
    -> std::optional<results>;

/// `key` of a measurement (results.<mode> of a run), or 0 if either is missing.
[[nodiscard]] auto field(const json* measurement, const char* key) -> double;

/// Percentile `pct` of a measurement's histogram `which`, or 0 if either is missing.
[[nodiscard]] auto percentile(const json* measurement, const char* which, const char* pct)
    -> double;

/// The locks in flight of the main matrix, and the label of each of its runs ("c64").
inline const std::vector<int> concurrencies{1, 16, 64, 256, 1024};
[[nodiscard]] auto label_of(int concurrency) -> std::string;

}  // namespace redlock::bench
