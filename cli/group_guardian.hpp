#pragma once

#include <redlock/result.hpp>

#include <sys/types.h>
#include <utility>

namespace redlock::cli {

/// A small process that SIGKILLs CMD's process group if redlock dies first,
/// even by SIGKILL. The kernel's death signal (PR_SET_PDEATHSIG) reaches CMD
/// alone; without this, what CMD started (a shell's commands) would run on
/// without the lock.
///
/// It waits on a pipe whose write end only redlock holds: end of file means
/// redlock is gone. It ignores every other signal and keeps no other file
/// open. Move-only; the destructor dismisses it (it exits without killing)
/// and reaps it.
class group_guardian {
public:
    /// Forks the guardian of `group`; fails with fork's or pipe's errno.
    [[nodiscard]] static auto start(pid_t group) -> result<group_guardian, int>;

    group_guardian(group_guardian&& other) noexcept
        : pid_{std::exchange(other.pid_, -1)}, pipe_{std::exchange(other.pipe_, -1)} {}
    auto operator=(group_guardian&&) -> group_guardian& = delete;
    group_guardian(const group_guardian&) = delete;
    auto operator=(const group_guardian&) -> group_guardian& = delete;
    ~group_guardian();

private:
    group_guardian(pid_t pid, int pipe) noexcept : pid_{pid}, pipe_{pipe} {}

    pid_t pid_ = -1;
    int pipe_ = -1;  ///< the write end
};

}  // namespace redlock::cli
