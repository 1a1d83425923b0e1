#pragma once

// What the CLI tests share: a `redlock` process run from the outside, and the fixture
// that gives it five masters and a config file naming them.

#include "support/cluster.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
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
    /// `env` entries ("NAME=value") replace or add to the test's environment; a bare
    /// "NAME" removes it. `cwd`, when given, is its working directory.
    cli_process(const std::vector<std::string>& args, const std::filesystem::path& dir,
                const std::vector<std::string>& env = {}, const std::filesystem::path& cwd = {});
    cli_process(const cli_process&) = delete;
    auto operator=(const cli_process&) -> cli_process& = delete;
    ~cli_process();

    [[nodiscard]] auto pid() const noexcept -> pid_t { return pid_; }
    /// kill(pid, sig): to `redlock` alone, as another process would send it.
    void signal(int sig) const;
    /// True until it has exited (and been reaped).
    [[nodiscard]] auto running() -> bool;
    /// Waits at most scaled(timeout) (support/slowdown.hpp) for it to exit. Throws
    /// std::runtime_error if it has not by then (the destructor then kills it), which
    /// fails the case.
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

/// `text` quoted for sh: a whole word, whatever it holds.
[[nodiscard]] auto quoted(const std::string& text) -> std::string;

/// The one JSON object a --json invocation printed; fails the case otherwise.
auto one_object(const cli_result& r) -> nlohmann::json;

/// The settings a CLI fixture's config file gives `redlock`, besides the masters. The connect
/// timeout is scaled by the tests' slowdown factor (support/slowdown.hpp); the request timeout
/// and the TTL are written as given: cases reason about them (cli_wake_test: a re-check comes
/// 2 x request_timeout after a refusal, before the holder's TTL ends).
struct cli_timeouts {
    int connect_timeout_ms;
    int request_timeout_ms;
    int ttl_ms;
};

/// Five masters, a fresh temp dir (`dir_prefix` + pid + a counter; removed at the end),
/// and in it a config file naming the masters with `timeouts`, a retry of 3 attempts
/// 50 ms apart (50 ms jitter) and a reconnect back-off of 20 to 200 ms. The CLI test
/// fixtures derive from it, each with the timeouts its cases need.
class cli_fixture : public cluster {
public:
    cli_fixture(const std::string& dir_prefix, const cli_timeouts& timeouts);
    cli_fixture(const cli_fixture&) = delete;
    auto operator=(const cli_fixture&) -> cli_fixture& = delete;
    ~cli_fixture();

    /// `redlock --config <ours> args...`, run to completion.
    auto redlock(std::vector<std::string> args, std::vector<std::string> env = {}) -> cli_result;
    /// `redlock --config <ours> args...`, started in the background.
    auto start(std::vector<std::string> args, std::vector<std::string> env = {})
        -> std::unique_ptr<cli_process>;

    std::filesystem::path dir;
    std::filesystem::path config;
};

}  // namespace redlock_test
