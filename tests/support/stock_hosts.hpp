#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace redlock_test {

/// How a forked child ended, and everything it wrote on stderr.
struct child_outcome {
    int wait_status = 0;  ///< as waitpid() reported it
    std::string output;   ///< the child's stderr: its own messages, or libuv's assertion text
    bool timed_out = false;

    /// Exited by itself with status 0: not killed by a signal (an abort), not timed out.
    [[nodiscard]] auto exited_cleanly() const -> bool;
    /// "exited with 0", "killed by signal 6 (Aborted)", ... and the output: for failure messages.
    [[nodiscard]] auto describe() const -> std::string;
};

/// Runs `body` in a forked child and waits for it, at most `limit` (then SIGKILLs it). For
/// cases whose failure today is an abort, which must not take the test process down, and
/// for cases that change the child's mount namespace.
///
/// In the child: the fatal-signal handlers are reset to their defaults (doctest's, and the
/// one of redis_server that would kill the parent's servers on an abort), core dumps are
/// off, stderr goes to a pipe that the parent reads, and the child ends with
/// _exit(body()) (1 if body throws): no destructor or atexit handler runs there, since the
/// servers copied into the child belong to the parent. The body must not use doctest
/// assertions; it says what went wrong on stderr and returns non-zero.
///
/// The child has only the calling thread: fork before starting threads in the parent
/// (fault_proxy, clients) and start them in the child instead.
[[nodiscard]] auto run_in_child(const std::function<int()>& body, std::chrono::milliseconds limit)
    -> child_outcome;

/// The /etc/hosts of a stock Debian or Ubuntu install: `localhost` is both 127.0.0.1 and ::1,
/// and getaddrinfo() sorts ::1 first (RFC 6724) wherever the loopback has IPv6.
extern const char* const stock_etc_hosts;

/// In the calling process, which must be single-threaded (a child of run_in_child, before
/// it starts any thread): a private mount namespace in which a file holding
/// stock_etc_hosts is bind-mounted over /etc/hosts. Needs CAP_SYS_ADMIN. Returns an empty
/// string on success, else what failed.
[[nodiscard]] auto use_stock_hosts() -> std::string;

/// The addresses getaddrinfo(host, AF_UNSPEC, SOCK_STREAM) returns, in its order, as text
/// ("::1", "127.0.0.1"); empty when it fails.
[[nodiscard]] auto resolve_all(const std::string& host) -> std::vector<std::string>;

}  // namespace redlock_test
