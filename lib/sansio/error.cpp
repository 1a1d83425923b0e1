#include "redlock/error.hpp"

#include <ostream>
#include <string>

namespace redlock {
namespace {

class category final : public std::error_category {
public:
    [[nodiscard]] auto name() const noexcept -> const char* override { return "redlock"; }

    [[nodiscard]] auto message(int value) const -> std::string override {
        switch (static_cast<errc>(value)) {
            case errc::contended:
                return "the lock is held by another owner";
            case errc::quorum_unreachable:
                return "a majority of nodes could not be reached";
            case errc::validity_expired:
                return "the lock's validity ran out while acquiring it";
            case errc::not_held:
                return "the lock is not held any more";
            case errc::cancelled:
                return "the operation was cancelled";
            case errc::invalid_argument:
                return "invalid argument";
            case errc::invalid_config:
                return "invalid configuration";
            case errc::client_stopped:
                return "the client has been shut down";
            case errc::would_deadlock:
                return "a blocking call was made on the client's loop thread";
            case errc::lock_lost:
                return "the lock was lost while held";
        }
        return "unknown redlock error";  // a value from a newer library version
    }
};

}  // namespace

auto redlock_category() noexcept -> const std::error_category& {
    static const category instance;
    return instance;
}

auto to_string(errc e) noexcept -> const char* {
    switch (e) {
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
    return "unknown";  // a value from a newer library version
}

auto to_string(node_status s) noexcept -> const char* {
    switch (s) {
        case node_status::ok:
            return "ok";
        case node_status::refused:
            return "refused";
        case node_status::error:
            return "error";
        case node_status::timeout:
            return "timeout";
        case node_status::unreachable:
            return "unreachable";
        case node_status::cancelled:
            return "cancelled";
        case node_status::pending:
            return "pending";
    }
    return "unknown";
}

auto to_string(const error& e) -> std::string {
    std::string text;
    if (e.code.category() == redlock_category()) {
        text.append(to_string(static_cast<errc>(e.code.value())));
    } else {
        text.append(e.code.category().name());
        text.push_back(':');
        text.append(std::to_string(e.code.value()));
    }
    text.append(": ");
    text.append(e.message.empty() ? e.code.message() : e.message);
    return text;
}

auto operator<<(std::ostream& os, errc e) -> std::ostream& {
    return os << to_string(e);
}

auto operator<<(std::ostream& os, node_status s) -> std::ostream& {
    return os << to_string(s);
}

auto operator<<(std::ostream& os, const error& e) -> std::ostream& {
    return os << to_string(e);
}

}  // namespace redlock
