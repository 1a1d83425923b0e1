#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace redlock_test {

/// What one run of the `redlock` binary did.
struct cli_result {
    int status = -1;  ///< the exit code, or 128 + the signal that killed it
    std::string out;  ///< everything it wrote on stdout
    std::string err;  ///< everything it wrote on stderr
    std::chrono::milliseconds took{0};
};

/// One `redlock` process (the binary REDLOCK_CLI) started by a test, in a process
/// group of its own, with stdout and stderr captured in files under `dir`.
///
/// The destructor SIGKILLs that whole process group — `redlock` and the command
/// it runs — and reaps `redlock`: no process outlives the test. Drive it from
/// the test thread.
class cli_process {
public:
    /// `env` entries ("NAME=value") are added to the test's environment.
    cli_process(const std::vector<std::string>& args, const std::filesystem::path& dir,
                const std::vector<std::string>& env = {});
    cli_process(const cli_process&) = delete;
    auto operator=(const cli_process&) -> cli_process& = delete;
    ~cli_process();

    [[nodiscard]] auto pid() const noexcept -> pid_t { return pid_; }
    /// kill(pid, sig): to `redlock` alone, as another process would send it.
    void signal(int sig) const;
    /// True until it has exited (and been reaped).
    [[nodiscard]] auto running() -> bool;
    /// Waits at most `timeout` for it to exit. Throws std::runtime_error if it
    /// has not by then (the destructor then kills it), which fails the case.
    auto wait(std::chrono::milliseconds timeout = std::chrono::seconds{30}) -> cli_result;

private:
    auto try_reap() -> bool;

    pid_t pid_ = -1;
    std::optional<int> status_;
    std::filesystem::path out_;
    std::filesystem::path err_;
    std::chrono::steady_clock::time_point started_;
};

/// The whole content of a file; empty when it does not exist.
[[nodiscard]] auto slurp(const std::filesystem::path& file) -> std::string;

}  // namespace redlock_test
