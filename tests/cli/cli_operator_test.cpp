// The operators' subcommands and flags (issue 26): --holder and who holds a lock in
// status and in the exit-75 message, --lock-delay-ms, break, audit and check-fence.
// Real processes against real servers.
#include "cli/cli_process.hpp"
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace std::chrono_literals;
using nlohmann::json;
using redlock_test::one_object;

namespace {

class operator_cli_cluster : public redlock_test::cli_fixture {
public:
    operator_cli_cluster()
        : cli_fixture{"redlock-cli-operator-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 5000}} {}
};

}  // namespace

TEST_SUITE("cli operator") {
    TEST_CASE_FIXTURE(operator_cli_cluster,
                      "--holder is stored, shown by status, and named to a rival that exits 75") {
        const auto held = redlock({"--json", "acquire", "--resource", "job", "--holder",
                                   "build-7:4411 (nightly-report)"});
        REQUIRE(held.status == 0);
        const std::string value = one_object(held).at("value");
        CHECK(value.ends_with("|build-7:4411 (nightly-report)"));

        const json status = one_object(redlock({"--json", "status", "--resource", "job"}));
        CHECK(status.at("holder") == value);
        CHECK(status.at("holder_name") == "build-7:4411 (nightly-report)");
        // Per node, where it holds: `acquire` exits once a majority granted, so a node that
        // answered late may hold nothing yet (or ever), node 0 included.
        std::size_t named = 0;
        for (const json& node : status.at("nodes")) {
            if (node.value("holder", json{}) != value) continue;
            CHECK(node.at("holder_name") == "build-7:4411 (nightly-report)");
            ++named;
        }
        CHECK(named >= 3);

        const auto rival = redlock({"acquire", "--resource", "job"});
        CHECK(rival.status == 75);
        CHECK(rival.err.find("is held by build-7:4411 (nightly-report), ") != std::string::npos);
        // An exiting `acquire` leaves a majority at least: 3, 4 or 5 nodes hold it.
        CHECK(rival.err.find(" left, on ") != std::string::npos);
        CHECK(rival.err.find(" of 5 nodes") != std::string::npos);

        const auto ran = redlock({"run", "--resource", "job", "--", "true"});
        CHECK(ran.status == 75);
        CHECK(ran.err.find("is held by build-7:4411 (nightly-report)") != std::string::npos);
    }

    TEST_CASE_FIXTURE(operator_cli_cluster, "run's default holder names the command it runs") {
        const auto started = dir / "started";
        auto run = start({"run", "--resource", "cron", "--", "sh", "-c",
                          "echo > " + redlock_test::quoted(started.string()) + "; sleep 30"});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return std::filesystem::exists(started); }));
        const json status = one_object(redlock({"--json", "status", "--resource", "cron"}));
        const std::string name = status.at("holder_name");
        CHECK(name.ends_with(":" + std::to_string(run->pid()) + " (sh)"));
    }

    TEST_CASE_FIXTURE(operator_cli_cluster, "--lock-delay-ms keeps the key past its TTL") {
        const auto held = redlock(
            {"acquire", "--resource", "delayed", "--ttl-ms", "1000", "--lock-delay-ms", "4000"});
        REQUIRE(held.status == 0);
        // Where it holds (an exiting acquire leaves a majority: node 0 may hold nothing), the
        // key lives past its 1 s TTL.
        std::size_t delayed = 0;
        for (std::size_t i = 0; i < size(); ++i) {
            const auto left = node(i).pttl(key_of("delayed"));
            if (left == -2) continue;
            CHECK(left > 4000);
            ++delayed;
        }
        CHECK(delayed >= 3);
    }

    TEST_CASE_FIXTURE(operator_cli_cluster,
                      "break needs a reason, frees the lock, and audit reads it back") {
        REQUIRE(
            redlock({"acquire", "--resource", "stuck", "--holder", "old host", "--fence"}).status ==
            0);

        const auto no_reason = redlock({"break", "--resource", "stuck"});
        CHECK(no_reason.status == 64);
        CHECK(count_holding(key_of("stuck")) >= 3);  // an exiting acquire leaves a majority

        const auto broke = redlock({"--json", "break", "--resource", "stuck", "--reason",
                                    "host is gone", "--breaker", "oncall"});
        REQUIRE(broke.status == 0);
        const json report = one_object(broke);
        CHECK(report.at("majority") == true);
        CHECK(report.at("broken_on") == 5);
        REQUIRE(report.at("broken").size() == 1);
        CHECK(report.at("broken").at(0).at("holder_name") == "old host");
        CHECK(count_holding(key_of("stuck")) == 0);

        const auto audit = redlock({"--json", "audit", "--resource", "stuck"});
        REQUIRE(audit.status == 0);
        const json log = one_object(audit);
        REQUIRE(log.at("entries").size() == 1);
        const json& e = log.at("entries").at(0);
        CHECK(e.at("breaker") == "oncall");
        CHECK(e.at("reason") == "host is gone");
        CHECK(e.at("holder_name") == "old host");
        CHECK(e.at("fence") == 1);
        CHECK(e.at("nodes") >= 3);  // where the hold was: a majority at least
        const auto human = redlock({"audit", "--resource", "stuck"});
        CHECK(human.out.find("broken by oncall: host is gone") != std::string::npos);
        const json every = one_object(redlock({"--json", "audit"}));
        REQUIRE(every.at("entries").size() == 1);
        CHECK(every.at("entries").at(0).at("resource") == "stuck");
    }

    TEST_CASE_FIXTURE(operator_cli_cluster,
                      "check-fence exits 0 for the current token and 1 for a stale one") {
        const json first =
            one_object(redlock({"--json", "acquire", "--resource", "fenced", "--fence"}));
        const std::string token = std::to_string(first.at("fence").get<long long>());
        const auto current =
            redlock({"--json", "check-fence", "--resource", "fenced", "--fence", token});
        CHECK(current.status == 0);
        CHECK(one_object(current).at("current") == true);

        REQUIRE(redlock({"release", "--resource", "fenced", "--value", first.at("value")}).status ==
                0);
        REQUIRE(redlock({"acquire", "--resource", "fenced", "--fence"}).status == 0);
        const auto stale =
            redlock({"--json", "check-fence", "--resource", "fenced", "--fence", token});
        CHECK(stale.status == 1);
        const json view = one_object(stale);
        CHECK(view.at("error").at("code") == "not_current");
        CHECK(view.at("error").at("message").get<std::string>().find("stale") != std::string::npos);
    }
}
