// `redlock run`'s command is a process group (issue 27, item 6): what a shell
// command starts is signalled with it, ended with it when run dies or the lock
// is lost, and never left running once the lock is released. In a terminal,
// the command's group gets the terminal. --pid-only keeps the old behaviour.
#include "cli/cli_process.hpp"
#include "cli/pty_process.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <string>
#include <sys/types.h>

using namespace std::chrono_literals;
using redlock_test::quoted;
using redlock_test::slurp;

namespace {

namespace fs = std::filesystem;

class group_cluster : public redlock_test::cli_fixture {
public:
    group_cluster()
        : cli_fixture{"redlock-cli-group-tests-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 2000}} {}

    /// A shell command that starts `sleep 300` in the background (a grandchild
    /// of run), writes its pid to `pid_file`, then does `then`.
    [[nodiscard]] auto background_sleep(const std::string& then) const -> std::string {
        const std::string file = (dir / "sleep.pid").string();
        return "sleep 300 & echo $! > " + quoted(file + ".tmp") + "; mv " + quoted(file + ".tmp") +
               " " + quoted(file) + "; " + then;
    }

    /// The pid background_sleep wrote, once it is there.
    auto sleep_pid() -> pid_t {
        const auto file = dir / "sleep.pid";
        REQUIRE(
            redlock_test::wait_until(redlock_test::scaled(10s), [&] { return fs::exists(file); }));
        const pid_t pid = std::stoi(slurp(file));
        REQUIRE(pid > 0);
        return pid;
    }
};

/// Gone: no such process, or a zombie nobody reaped yet (it runs no more).
auto gone(pid_t pid) -> bool {
    if (::kill(pid, 0) != 0) return errno == ESRCH;
    const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

/// Kills a process a --pid-only case left behind on purpose.
struct stray {
    pid_t pid;
    ~stray() { ::kill(pid, SIGKILL); }
};

}  // namespace

TEST_SUITE("cli") {
    TEST_CASE_FIXTURE(group_cluster, "a SIGKILLed run takes what its command started with it") {
        auto run = start({"run", "-r", "job", "-c", background_sleep("wait")});
        const pid_t sleeper = sleep_pid();
        REQUIRE_FALSE(gone(sleeper));

        run->signal(SIGKILL);  // to redlock alone
        CHECK(run->wait(10s).status == 128 + SIGKILL);
        // The guard process ends the group; PR_SET_PDEATHSIG alone reaches sh only.
        CHECK(redlock_test::wait_until(redlock_test::scaled(10s), [&] { return gone(sleeper); }));
    }

    TEST_CASE_FIXTURE(group_cluster, "with --pid-only what the command started outlives run") {
        auto run = start({"run", "-r", "job", "--pid-only", "-c", background_sleep("wait")});
        const stray sleeper{sleep_pid()};
        run->signal(SIGKILL);
        CHECK(run->wait(10s).status == 128 + SIGKILL);
        CHECK(redlock_test::holds_for(500ms, [&] { return !gone(sleeper.pid); }));
    }

    TEST_CASE_FIXTURE(group_cluster, "a forwarded SIGTERM reaches what the command started") {
        auto run = start({"run", "-r", "job", "-c", background_sleep("wait")});
        const pid_t sleeper = sleep_pid();
        run->signal(SIGTERM);
        const auto r = run->wait(10s);
        INFO("stderr: " << r.err);
        CHECK(r.status == 128 + SIGTERM);  // sh's status: killed by the forwarded SIGTERM
        CHECK(gone(sleeper));              // gone before run exited, not only eventually
    }

    TEST_CASE_FIXTURE(group_cluster, "a lost lock ends the command's whole group") {
        auto run =
            start({"run", "-r", "job", "--kill-after-ms", "300", "-c", background_sleep("wait")});
        const pid_t sleeper = sleep_pid();
        REQUIRE(redlock({"break", "--resource", "job", "--reason", "group test"}).status == 0);
        const auto r = run->wait(15s);
        INFO("stderr: " << r.err);
        CHECK(r.status == 70);
        CHECK(r.err.find("process group") != std::string::npos);
        CHECK(gone(sleeper));
    }

    TEST_CASE_FIXTURE(group_cluster,
                      "what the command leaves running is ended before the release") {
        // sh exits at once; the sleep it started would run on without the lock.
        auto run =
            start({"run", "-r", "job", "--kill-after-ms", "300", "-c", background_sleep("exit 4")});
        const pid_t sleeper = sleep_pid();
        const auto r = run->wait(15s);
        INFO("stderr: " << r.err);
        CHECK(r.status == 4);
        CHECK(r.err.find("leaving processes in its group") != std::string::npos);
        CHECK(gone(sleeper));
        CHECK(redlock({"status", "-r", "job"}).out.find("free") != std::string::npos);
    }

    TEST_CASE_FIXTURE(group_cluster, "in a terminal the command reads it and gets its ^C") {
        redlock_test::pty_process term{{REDLOCK_CLI, "--config", config.string(), "run", "-r",
                                        "job", "-c", "read line; echo \"got:$line\"; exec cat"}};
        // Outside the terminal's foreground group, sh's read would stop it (SIGTTIN).
        term.type("hello\n");
        REQUIRE(term.read_until("got:hello", redlock_test::scaled(10s)));
        // The terminal's echo, then cat's copy: cat runs (sh is gone, nothing
        // catches the ^C).
        term.type("ping\n");
        REQUIRE(term.read_until("ping\r\nping\r\n", redlock_test::scaled(10s)));
        term.type("\x03");  // ^C: the terminal signals its foreground group, CMD's
        const int status = term.wait(redlock_test::scaled(10s));
        INFO("terminal: " << term.screen());
        CHECK(status == 128 + SIGINT);
    }

    TEST_CASE_FIXTURE(group_cluster, "^Z stops run with its command, and fg continues both") {
        // A real job-control shell plays the user's: it sees the job stop only if
        // run stops too, and fg gives the terminal back to run's group.
        redlock_test::pty_process term{{"/bin/bash", "--norc", "--noprofile", "-i"}};
        INFO("terminal: " << term.screen());
        term.type("PS1='$ '; " + std::string{REDLOCK_CLI} + " --config " + quoted(config.string()) +
                  " run -r job -c 'echo run\"\"ning; exec cat'\n");
        REQUIRE(term.read_until("running",
                                redlock_test::scaled(10s)));  // the line typed shows run""ning
        term.type("ping\n");
        REQUIRE(term.read_until("ping\r\nping\r\n", redlock_test::scaled(10s)));
        term.type("\x1a");  // ^Z
        REQUIRE(term.read_until("Stopped", redlock_test::scaled(10s)));
        term.type("fg\n");
        // Until cat has the terminal again, a line typed may go to bash, which
        // drops typeahead as it switches the terminal's modes: type until cat
        // echoes one.
        bool echoed = false;
        for (int i = 0; i < 40 && !echoed; ++i) {
            term.type("pong\n");
            echoed = term.read_until("pong\r\npong\r\n", redlock_test::scaled(250ms));
        }
        REQUIRE(echoed);
        term.type("\x03");  // ^C ends cat; run exits with its status
        // The same for bash's next line: $? stays run's status until one runs.
        bool answered = false;
        for (int i = 0; i < 40 && !answered; ++i) {
            term.type("echo \"r\"\"c=$?\"\n");  // typed, it shows r""c
            answered = term.read_until("rc=", redlock_test::scaled(250ms));
        }
        CHECK(term.read_until("rc=130", redlock_test::scaled(1s)));
        term.type("exit 0\n");
        CHECK(term.wait(redlock_test::scaled(10s)) == 0);
    }
}
