#include "exit_codes.hpp"

namespace redlock::cli {

auto errc_name(std::error_code code) -> std::string {
    if (code.category() != redlock_category()) return code.category().name();
    switch (static_cast<errc>(code.value())) {
        case errc::contended:
            return "contended";
        case errc::quorum_unreachable:
            return "quorum_unreachable";
        case errc::validity_expired:
            return "validity_expired";
        case errc::not_held:
            return "not_held";
        case errc::cancelled:
            return "cancelled";
        case errc::invalid_argument:
            return "invalid_argument";
        case errc::invalid_config:
            return "invalid_config";
        case errc::client_stopped:
            return "client_stopped";
        case errc::would_deadlock:
            return "would_deadlock";
        case errc::lock_lost:
            return "lock_lost";
    }
    return "error";  // a value from a newer library version
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
