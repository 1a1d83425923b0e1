// `redlock elect` and `redlock leader` (README, "Leader election") against five
// real masters: two elect processes take turns running their command (hot
// standby), a SIGKILLed leader's standby takes over with a higher REDLOCK_TERM,
// `leader --json` names the leader, and `leader --watch` prints each change.
#include "cli/cli_process.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <sys/types.h>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::quoted;
using redlock_test::slurp;

namespace {

namespace fs = std::filesystem;

class election_cluster : public redlock_test::cli_fixture {
public:
    election_cluster()
        : cli_fixture{"redlock-cli-election-tests-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 1000}} {}

    /// `elect --name svc --proposal <tag>` running a command that writes its
    /// REDLOCK_TERM and pid to <dir>/<tag>.term and <tag>.pid, then sleeps.
    auto candidate(const std::string& tag) -> std::unique_ptr<redlock_test::cli_process> {
        const std::string base = (dir / tag).string();
        return start({"elect", "--name", "svc", "--proposal", tag, "--", "/bin/sh", "-c",
                      "echo $$ > \"$0.pid\"; echo \"$REDLOCK_TERM\" > \"$0.tmp\"; "
                      "mv \"$0.tmp\" \"$0.term\"; exec sleep 300",
                      base});
    }
    /// The term <tag>'s command was given, once it runs (within scaled(limit)).
    auto term_of(const std::string& tag, std::chrono::milliseconds limit = 10s)
        -> std::optional<unsigned long long> {
        const auto file = dir / (tag + ".term");
        if (!redlock_test::wait_until(redlock_test::scaled(limit),
                                      [&] { return fs::exists(file); }))
            return std::nullopt;
        return std::stoull(slurp(file));
    }
    auto runs(const std::string& tag) -> bool { return fs::exists(dir / (tag + ".term")); }
    auto pid_of(const std::string& tag) -> pid_t { return std::stoi(slurp(dir / (tag + ".pid"))); }
};

/// Gone: no such process, or a zombie (it runs no more).
auto gone(pid_t pid) -> bool {
    if (::kill(pid, 0) != 0) return errno == ESRCH;
    const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

/// Every line a `leader --watch --json` wrote so far (its stdout file in `dir`).
auto watch_lines(const fs::path& dir) -> std::vector<nlohmann::json> {
    std::vector<nlohmann::json> lines;
    for (const auto& entry : fs::directory_iterator{dir}) {
        if (entry.path().extension() != ".out") continue;
        std::istringstream text{slurp(entry.path())};
        for (std::string line; std::getline(text, line);) {
            auto parsed = nlohmann::json::parse(line, nullptr, false);
            if (!parsed.is_discarded() && parsed.contains("highest_term"))
                lines.push_back(std::move(parsed));
        }
    }
    return lines;
}

}  // namespace

TEST_SUITE("cli election") {
    TEST_CASE_FIXTURE(election_cluster,
                      "elect: one candidate runs CMD at a time, and the standby takes over with "
                      "a higher REDLOCK_TERM when the leader's redlock is SIGKILLed") {
        auto first = candidate("a");
        const auto first_term = term_of("a");
        REQUIRE(first_term);
        auto second = candidate("b");
        CHECK(redlock_test::holds_for(1500ms, [&] { return !runs("b"); }));

        auto shown = redlock({"leader", "--name", "svc", "--json"});
        REQUIRE(shown.status == 0);
        auto view = redlock_test::one_object(shown);
        REQUIRE(view["leader"].is_object());
        CHECK(view["leader"]["value"] == "a");
        CHECK(view["leader"]["term"] == *first_term);

        const pid_t first_cmd = pid_of("a");
        first->signal(SIGKILL);
        const auto second_term = term_of("b");
        REQUIRE(second_term);
        CHECK(*second_term > *first_term);
        CHECK(gone(first_cmd));  // ended with its redlock, before the standby ran

        shown = redlock({"leader", "--name", "svc", "--json"});
        REQUIRE(shown.status == 0);
        view = redlock_test::one_object(shown);
        REQUIRE(view["leader"].is_object());
        CHECK(view["leader"]["value"] == "b");
        CHECK(view["leader"]["term"] == *second_term);
        CHECK(second->running());
    }

    TEST_CASE_FIXTURE(election_cluster,
                      "leader --watch prints the leader now and a line per change until "
                      "SIGTERM") {
        auto watching = start({"leader", "--name", "svc", "--watch", "--json"});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return !watch_lines(dir).empty(); }));
        CHECK(watch_lines(dir).front()["leader"].is_null());

        const auto led = redlock({"elect", "--name", "svc", "--proposal", "w", "--ttl-ms", "30000",
                                  "--", "/bin/sh", "-c", "sleep 0.3"});
        CHECK(led.status == 0);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            const auto lines = watch_lines(dir);
            return lines.size() >= 3 && lines.back()["leader"].is_null();
        }));
        const auto lines = watch_lines(dir);
        CHECK(lines[1]["leader"]["value"] == "w");
        CHECK(lines[1]["leader"]["term"].get<unsigned long long>() >= 1);

        watching->signal(SIGTERM);
        CHECK(watching->wait(10s).status == 0);
    }

    TEST_CASE_FIXTURE(election_cluster, "elect without a command is a usage error") {
        const auto r = redlock({"elect", "--name", "svc"});
        CHECK(r.status == 64);
    }
}
