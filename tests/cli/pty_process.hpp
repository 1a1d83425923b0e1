#pragma once

// A process started as an interactive shell would start a job: the leader of
// a new session whose controlling terminal is a pseudo-terminal, in that
// terminal's foreground. The test plays the user at the other end.

#include <chrono>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace redlock_test {

class pty_process {
public:
    /// Starts argv (argv[0] a path) with stdin, stdout and stderr on the terminal.
    explicit pty_process(std::vector<std::string> argv);
    pty_process(const pty_process&) = delete;
    auto operator=(const pty_process&) -> pty_process& = delete;
    /// SIGKILLs the process (and its group) if it still runs, and reaps it.
    ~pty_process();

    [[nodiscard]] auto pid() const noexcept -> pid_t { return pid_; }
    /// Types `keys` at the terminal ("\x03" is ^C).
    void type(std::string_view keys) const;
    /// Reads what the terminal shows until `needle` appears or `timeout`
    /// passes; true if it appeared.
    auto read_until(std::string_view needle, std::chrono::milliseconds timeout) -> bool;
    /// Everything the terminal showed so far.
    [[nodiscard]] auto screen() const -> const std::string& { return screen_; }
    /// Waits at most `timeout` for the exit: the code, or 128 + the signal;
    /// -1 if it still runs then.
    auto wait(std::chrono::milliseconds timeout) -> int;

private:
    pid_t pid_ = -1;
    int master_ = -1;
    int status_ = -1;
    std::string screen_;
};

}  // namespace redlock_test
