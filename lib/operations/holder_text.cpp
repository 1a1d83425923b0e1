#include "operations/holder_text.hpp"

#include <cerrno>
#include <pthread.h>
#include <unistd.h>

namespace redlock::detail {

namespace {

auto make_default_holder() -> std::string {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    // glibc's short name of argv[0]: what `ps` shows.
    std::string made = std::string{host[0] != '\0' ? host : "unknown-host"} + ":" +
                       std::to_string(getpid()) + " (" + program_invocation_short_name + ")";
    if (made.size() > max_holder_length) made.resize(max_holder_length);
    return made;
}

/// Made once; again in a forked child, by the handler that runs in it before
/// any other code (it has one thread then, so nothing reads the text meanwhile).
auto holder_text() -> std::string& {
    static std::string* const made = [] {
        auto* text = new std::string{make_default_holder()};  // used until the process ends
        pthread_atfork(nullptr, nullptr, [] { holder_text() = make_default_holder(); });
        return text;
    }();
    return *made;
}

}  // namespace

auto default_holder() -> const std::string& {
    return holder_text();
}

auto holder_problem(std::string_view holder) -> std::string {
    if (holder.size() > max_holder_length) {
        return "holder must be at most " + std::to_string(max_holder_length) + " bytes, not " +
               std::to_string(holder.size());
    }
    for (const char c : holder) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f)
            return "holder must not hold control characters (it is printed as it is)";
    }
    return {};
}

auto value_template(std::string_view holder) -> std::string {
    std::string value(32, '0');
    if (!holder.empty()) {
        value.reserve(33 + holder.size());
        value += '|';
        value += holder;
    }
    return value;
}

}  // namespace redlock::detail
