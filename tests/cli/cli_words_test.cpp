// The words `redlock` uses (issue 38, item 10): --help names the kinds of quorum members, a
// usage error inside a subcommand points at that subcommand's --help, and a lock lost while
// `run`'s command ran is not said to "stay valid until its previous deadline" once run has
// ended the command. Real processes against real servers.
#include "cli/cli_process.hpp"
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using nlohmann::json;
using redlock_test::one_object;

namespace {

auto words_has(const std::string& text, const std::string& part) -> bool {
    return text.find(part) != std::string::npos;
}

class words_cluster : public redlock_test::cli_fixture {
public:
    words_cluster()
        : cli_fixture{"redlock-cli-words-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 5000}} {}
};

}  // namespace

TEST_SUITE("cli words") {
    TEST_CASE_FIXTURE(words_cluster, "--help names the three kinds of quorum members") {
        const auto help = redlock({"--help"});
        CHECK(help.status == 0);
        for (const char* part : {"quorum members", "\"nodes\"", "Redis Cluster", "\"clusters\"",
                                 "Sentinel", "\"sentinel_masters\""}) {
            CHECK_MESSAGE(words_has(help.out, part), part);
        }
        // Not the words that read as if Redis Cluster were not supported.
        CHECK_FALSE(words_has(help.out, "not Redis Cluster"));
    }

    TEST_CASE_FIXTURE(words_cluster, "a usage error inside a subcommand points at its own --help") {
        const auto no_reason = redlock({"break", "-r", "stuck"});
        CHECK(no_reason.status == 64);
        CHECK(words_has(no_reason.err, "--reason"));
        CHECK_MESSAGE(words_has(no_reason.err, "(see redlock break --help)"), no_reason.err);

        const auto machine = redlock({"--json", "break", "-r", "stuck"});
        CHECK(machine.status == 64);
        CHECK(
            words_has(one_object(machine).at("error").at("message"), "(see redlock break --help)"));

        const auto typo = redlock({"acquire", "--resurce", "x"});
        CHECK(typo.status == 64);
        CHECK(words_has(typo.err, "(see redlock acquire --help)"));

        const auto conflict = redlock({"acquire", "-r", "x", "--shared", "--permits", "2"});
        CHECK(conflict.status == 64);
        CHECK(words_has(conflict.err, "(see redlock acquire --help)"));

        // No subcommand read: the tool's own --help.
        const auto unknown = redlock({"aquire", "-r", "x"});
        CHECK(unknown.status == 64);
        CHECK(words_has(unknown.err, "(see redlock --help)"));
    }

    TEST_CASE_FIXTURE(words_cluster,
                      "a lock lost while run's command runs is not said to stay valid") {
        const auto started = dir / "started";
        auto run = start({"run", "--resource", "job", "--ttl-ms", "1500", "--", "sh", "-c",
                          "touch " + redlock_test::quoted(started.string()) + "; sleep 30"});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return std::filesystem::exists(started); }));
        // Another value on a majority: the next renewal is refused there, and the lock lost.
        const std::string key = key_of("job");
        for (std::size_t i : {0U, 1U, 2U})
            (void)node(i).command({"SET", key, "someone-else", "PX", "20000"});
        const auto ran = run->wait(20s);
        CHECK(ran.status == 70);
        INFO("stderr: " << ran.err);
        CHECK(words_has(ran.err, "lost the lock on 'job' while CMD ran"));
        CHECK_FALSE(words_has(ran.err, "stays valid until its previous deadline"));
    }
}
