#pragma once

// What a failed randomized run leaves for the person who has to find out why: its seed, the
// command that replays it, where its run directory was kept, and the end of its fault log.
// failure_notice says it at the end of the test's scope, unless the run was marked passed,
// so a run that throws (a node that will not restart, a REQUIRE) says it too.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <system_error>
#include <unistd.h>
#include <utility>

extern char** environ;  // NOLINT: POSIX

namespace redlock_torture {

/// The shell command that replays this run: every variable of the environment whose name
/// starts with `prefix`, as it is now, but `seed_variable` set to `seed`; then this
/// executable (/proc/self/exe). Values are single-quoted.
[[nodiscard]] inline auto replay_command(const std::string& prefix,
                                         const std::string& seed_variable, std::uint64_t seed)
    -> std::string {
    auto quoted = [](const std::string& text) {
        std::string out = "'";
        for (const char c : text) out += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
        return out + "'";
    };
    std::string command = seed_variable + "=" + std::to_string(seed);
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string entry{*e};
        const auto eq = entry.find('=');
        if (eq == std::string::npos || !entry.starts_with(prefix)) continue;
        if (entry.compare(0, eq, seed_variable) == 0) continue;
        command += " " + entry.substr(0, eq) + "=" + quoted(entry.substr(eq + 1));
    }
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return command + " " + (ec ? std::string{"<this test's executable>"} : self.string());
}

/// The last `lines` lines of `file`, each after a newline and two spaces; "" if unreadable.
[[nodiscard]] inline auto tail_of(const std::filesystem::path& file, std::size_t lines)
    -> std::string {
    std::ifstream in{file};
    std::deque<std::string> last;
    for (std::string line; std::getline(in, line);) {
        last.push_back(std::move(line));
        if (last.size() > lines) last.pop_front();
    }
    std::string text;
    for (const auto& line : last) text += "\n  " + line;
    return text;
}

/// Calls `say_it` when it goes out of scope, unless passed() was called first: at the end
/// of a test that failed, or on the way out of one that threw.
class failure_notice {
public:
    explicit failure_notice(std::function<void()> say_it) : say_it_{std::move(say_it)} {}
    failure_notice(const failure_notice&) = delete;
    auto operator=(const failure_notice&) -> failure_notice& = delete;
    ~failure_notice() {
        if (passed_) return;
        try {
            say_it_();
        } catch (...) {  // NOLINT(bugprone-empty-catch): a notice must not throw from here
        }
    }
    void passed() noexcept { passed_ = true; }

private:
    std::function<void()> say_it_;
    bool passed_ = false;
};

}  // namespace redlock_torture
