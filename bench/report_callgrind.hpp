// The report's callgrind figures: instructions per lock cycle, top functions, allocation sites.
#pragma once

#include "report_input.hpp"

#include <string>

namespace redlock::bench {

/// callgrind.json's instructions per acquire + release cycle of `mode` (lib, raw,
/// raw_resp), or 0 if it was not measured.
[[nodiscard]] auto instructions_per_cycle(const results& r, const char* mode) -> double;

/// Instructions per cycle of the first function in `tsv` whose name contains `part`, or -1.
[[nodiscard]] auto per_cycle_of(const std::string& tsv, const std::string& part) -> double;

/// Instructions per cycle of each client, and the library ÷ raw ratios.
[[nodiscard]] auto callgrind_table(const results& r) -> std::string;
/// The functions that cost the most exclusive instructions, library then raw.
[[nodiscard]] auto callgrind_top_tables(const results& r) -> std::string;
/// The library's allocations per cycle by call site.
[[nodiscard]] auto alloc_sites_table(const results& r) -> std::string;

}  // namespace redlock::bench
