// `redlock run`'s flock(1) habits (-n, -w, -E, -c), a command that never
// outlives run, an extend that reports the validity the lock really has, and
// the one error object of a release that released nothing (issue 17).
#include "cli/cli_process.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/types.h>

using namespace std::chrono_literals;
using nlohmann::json;
using redlock_test::one_object;
using redlock_test::quoted;
using redlock_test::slurp;

namespace {

namespace fs = std::filesystem;

class flock_cluster : public redlock_test::cli_fixture {
public:
    // Generous timeouts: each invocation is a fresh process on a loaded machine.
    flock_cluster()
        : cli_fixture{"redlock-cli-flock-tests-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 2000}} {}

    /// Holds `resource` for 20 s with another value (a rival's lock).
    void hold(const std::string& resource) {
        REQUIRE(redlock({"acquire", "--resource", resource, "--ttl-ms", "20000"}).status == 0);
    }
};

/// Gone: no such process, or a zombie nobody reaped yet (it runs no more).
auto gone(pid_t pid) -> bool {
    if (::kill(pid, 0) != 0) return errno == ESRCH;
    const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

}  // namespace

TEST_SUITE("cli") {
    // ---- -n, -w, -E, -c ---------------------------------------------------------------------

    TEST_CASE_FIXTURE(flock_cluster, "run -n on a held lock fails at once with 75") {
        hold("job");
        const auto ran = redlock({"--json", "run", "-r", "job", "-n", "--", "true"});
        CHECK(ran.status == 75);
        CHECK(one_object(ran).at("error").at("code") == "contended");
        CHECK(ran.took < redlock_test::scaled(5s));
    }

    TEST_CASE_FIXTURE(flock_cluster, "run -w 0.5 waits half a second for a held lock") {
        hold("job");
        const auto ran = redlock({"run", "-r", "job", "-w", "0.5", "--", "true"});
        CHECK(ran.status == 75);
        CHECK(ran.took >= 400ms);  // the last attempt starts no later than the deadline
        CHECK(ran.took < redlock_test::scaled(10s));
    }

    TEST_CASE_FIXTURE(flock_cluster, "run -E sets the exit code of a held lock") {
        hold("job");
        CHECK(redlock({"run", "-r", "job", "-E", "3", "--", "true"}).status == 3);
        CHECK(redlock({"run", "-r", "job", "--conflict-exit-code", "0", "--", "true"}).status == 0);
        // Not held: CMD's status, whatever -E says.
        CHECK(redlock({"run", "-r", "other", "-E", "3", "--", "sh", "-c", "exit 5"}).status == 5);
    }

    TEST_CASE_FIXTURE(flock_cluster, "run -c runs a shell command") {
        const auto marker = dir / "ran";
        const auto ran =
            redlock({"run", "-r", "job", "-c",
                     "echo \"$REDLOCK_RESOURCE\" > " + quoted(marker.string()) + "; exit 4"});
        CHECK(ran.status == 4);
        CHECK(slurp(marker) == "job\n");
    }

    TEST_CASE_FIXTURE(flock_cluster, "flag conflicts and bad values are usage errors naming them") {
        const auto both_waits =
            redlock({"run", "-r", "job", "-w", "1", "--wait-ms", "5", "--", "true"});
        CHECK(both_waits.status == 64);
        CHECK(both_waits.err.find("--wait") != std::string::npos);
        CHECK(both_waits.err.find("--wait-ms") != std::string::npos);

        const auto nonblock_wait = redlock({"run", "-r", "job", "-n", "-w", "1", "--", "true"});
        CHECK(nonblock_wait.status == 64);
        CHECK(nonblock_wait.err.find("--nonblock") != std::string::npos);
        CHECK(nonblock_wait.err.find("--wait") != std::string::npos);

        const auto nonblock_wait_ms =
            redlock({"run", "-r", "job", "-n", "--wait-ms", "1", "--", "true"});
        CHECK(nonblock_wait_ms.status == 64);
        CHECK(nonblock_wait_ms.err.find("--wait-ms") != std::string::npos);

        const auto code = redlock({"run", "-r", "job", "-E", "256", "--", "true"});
        CHECK(code.status == 64);
        CHECK(code.err.find("256") != std::string::npos);

        const auto seconds = redlock({"run", "-r", "job", "-w", "soon", "--", "true"});
        CHECK(seconds.status == 64);
        CHECK(seconds.err.find("'soon'") != std::string::npos);

        const auto two_commands =
            redlock({"--json", "run", "-r", "job", "-c", "true", "--", "true"});
        CHECK(two_commands.status == 64);
        const std::string message = one_object(two_commands).at("error").at("message");
        CHECK(message.find("-c") != std::string::npos);
        CHECK(message.find("--") != std::string::npos);
    }

    TEST_CASE_FIXTURE(flock_cluster, "run --help shows the flock flags and the default") {
        const auto help = redlock({"run", "--help"});
        CHECK(help.status == 0);
        for (const char* flag : {"--nonblock", "--wait", "--conflict-exit-code", "--command",
                                 "one attempt", "PDEATHSIG"}) {
            INFO(flag);
            CHECK(help.out.find(flag) != std::string::npos);
        }
    }

    // ---- the command never outlives run -----------------------------------------------------

    TEST_CASE_FIXTURE(flock_cluster, "a SIGKILLed run takes its command with it") {
        const auto pid_file = dir / "pid";
        auto run = start({"run", "-r", "job", "--ttl-ms", "2000", "--", "sh", "-c",
                          "echo $$ > " + quoted(pid_file.string() + ".tmp") + "; mv " +
                              quoted(pid_file.string() + ".tmp") + " " + quoted(pid_file.string()) +
                              "; exec sleep 30"});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return fs::exists(pid_file); }));
        const pid_t child = std::stoi(slurp(pid_file));
        REQUIRE(child > 0);
        REQUIRE_FALSE(gone(child));

        run->signal(SIGKILL);  // to redlock alone, not its process group
        CHECK(run->wait(10s).status == 128 + SIGKILL);

        CHECK(redlock_test::wait_until(redlock_test::scaled(10s), [&] { return gone(child); }));
    }

    // ---- extend reports what the lock really has --------------------------------------------

    TEST_CASE_FIXTURE(flock_cluster, "extend with a shorter ttl reports the longer validity kept") {
        const std::string value =
            one_object(redlock({"--json", "acquire", "--resource", "deploy", "--ttl-ms", "60000"}))
                .at("value");

        const auto extended = redlock(
            {"--json", "extend", "--resource", "deploy", "--value", value, "--ttl-ms", "1000"});

        REQUIRE(extended.status == 0);
        const long long validity = one_object(extended).at("validity_ms");
        CHECK(validity > 50000);
        CHECK(validity <= 60000);
    }

    // ---- release of a value that holds nothing ----------------------------------------------

    TEST_CASE_FIXTURE(flock_cluster, "a release that released nothing is one error object") {
        const std::string value =
            one_object(redlock({"--json", "acquire", "--resource", "deploy"})).at("value");
        REQUIRE(redlock({"release", "--resource", "deploy", "--value", value}).status == 0);

        const auto again = redlock({"--json", "release", "--resource", "deploy", "--value", value});

        CHECK(again.status == 1);
        const json report = one_object(again);
        REQUIRE(report.size() == 1);  // "error" alone: no result fields beside it
        const json& error = report.at("error");
        CHECK(error.at("code") == "not_held");
        CHECK(error.at("released") == 0);
        CHECK(error.at("pending").is_number());
        CHECK(error.at("kind") == "exclusive");
        CHECK(error.at("nodes").size() == 5);
        CHECK(error.at("message").get<std::string>().find("'deploy'") != std::string::npos);
    }
}
