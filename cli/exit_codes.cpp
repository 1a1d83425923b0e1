#include "exit_codes.hpp"

#include <string_view>

namespace redlock::cli {

auto errc_name(std::error_code code) -> std::string {
    if (code.category() != redlock_category()) return code.category().name();
    const std::string_view name = to_string(static_cast<errc>(code.value()));
    return name == "unknown" ? "error" : std::string{name};  // "error": a newer library's value
}

auto classify(const error& e) -> failure_report {
    failure_report report{exit_failure, errc_name(e.code), e.message};
    if (report.message.empty()) report.message = e.code.message();
    if (e.code == errc::contended || e.code == errc::validity_expired) {
        report.exit_code = exit_not_acquired;
    } else if (e.code == errc::quorum_unreachable) {
        report.exit_code = exit_unavailable;
    } else if (e.code == errc::invalid_config) {
        report.exit_code = exit_config;
    } else if (e.code == errc::invalid_argument) {
        report.exit_code = exit_usage;
    }
    return report;
}

}  // namespace redlock::cli
