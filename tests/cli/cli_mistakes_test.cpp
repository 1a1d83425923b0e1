// The `redlock` binary forgives and explains mistakes (issue 27): a mistyped
// subcommand or flag is named with the one meant, run's -c refuses a config
// file, a value released or extended as the wrong kind of lock gets the flag it
// needs, status finds a semaphore by itself, a semaphore count that disagrees is
// named on every node, a stale extend says that the lock expired, and
// `check --strict` fails on nodes that can lose writes. Real processes against
// real servers.
#include "cli/cli_process.hpp"
#include "support/cluster.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using nlohmann::json;
using redlock_test::cli_result;
using redlock_test::one_object;
using redlock_test::slurp;

namespace {

auto mistakes_contains(const std::string& text, const std::string& part) -> bool {
    return text.find(part) != std::string::npos;
}

/// The value `acquire` printed on stdout, without its newline.
auto mistakes_value_of(const cli_result& r) -> std::string {
    std::string value = r.out;
    while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
    return value;
}

class mistakes_cluster : public redlock_test::cli_fixture {
public:
    mistakes_cluster()
        : cli_fixture{"redlock-cli-mistakes-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 5000}} {}
};

}  // namespace

TEST_SUITE("cli mistakes") {
    // ---- 2: typos are named --------------------------------------------------------------------

    TEST_CASE_FIXTURE(mistakes_cluster, "a mistyped subcommand is named with the one meant") {
        const auto human = redlock({"aquire", "-r", "x"});
        CHECK(human.status == 64);
        CHECK(mistakes_contains(human.err, "unknown subcommand 'aquire': did you mean 'acquire'?"));

        const auto machine = redlock({"--json", "relase", "-r", "x", "--value", "v"});
        CHECK(machine.status == 64);
        const json error = one_object(machine).at("error");
        CHECK(error.at("code") == "usage");
        CHECK(mistakes_contains(error.at("message"),
                                "unknown subcommand 'relase': did you mean 'release'?"));

        const auto far = redlock({"frobnicate"});
        CHECK(far.status == 64);
        CHECK(mistakes_contains(far.err, "unknown subcommand 'frobnicate'"));
        CHECK_FALSE(mistakes_contains(far.err, "did you mean"));
    }

    TEST_CASE_FIXTURE(mistakes_cluster, "a mistyped flag is named with the one meant") {
        const auto resurce = redlock({"acquire", "--resurce", "x"});
        CHECK(resurce.status == 64);
        CHECK(
            mistakes_contains(resurce.err, "unknown flag '--resurce': did you mean '--resource'?"));

        const auto ttl = redlock({"acquire", "-r", "x", "--ttl", "5000"});
        CHECK(ttl.status == 64);
        CHECK(mistakes_contains(ttl.err, "unknown flag '--ttl': did you mean '--ttl-ms'?"));

        const auto shared = redlock({"release", "-r", "x", "--value", "v", "--sahred"});
        CHECK(shared.status == 64);
        CHECK(mistakes_contains(shared.err, "unknown flag '--sahred': did you mean '--shared'?"));

        // Nothing taken: the lock is still free.
        const auto status = redlock({"--json", "status", "-r", "x"});
        CHECK(status.status == 0);
        CHECK(one_object(status).at("holder").is_null());
    }

    // ---- 3: -c inside run -----------------------------------------------------------------------

    TEST_CASE_FIXTURE(mistakes_cluster, "run -c with a JSON config file is refused with a hint") {
        const auto refused = redlock({"run", "-r", "cfg", "-c", config.string()});
        CHECK(refused.status == 64);
        CHECK(mistakes_contains(refused.err,
                                "'-c' inside run is the shell command (as flock -c)"
                                "; for the config file use --config"));
        const auto machine = redlock({"--json", "run", "-r", "cfg", "-c", config.string()});
        CHECK(machine.status == 64);
        CHECK(one_object(machine).at("error").at("code") == "usage");

        // A shell command is still one; and a file that is not JSON is a script.
        const auto script = dir / "script.sh";
        std::ofstream{script} << "exit 3\n";
        CHECK(redlock({"run", "-r", "cfg", "-c", "exit 4"}).status == 4);
        CHECK(redlock({"run", "-r", "cfg", "-c", "sh " + script.string()}).status == 3);
    }

    // ---- 4: the wrong lock kind ----------------------------------------------------------------

    TEST_CASE_FIXTURE(mistakes_cluster, "a reader's value without --shared is told to add it") {
        const auto acquired = redlock({"acquire", "--shared", "-r", "doc", "--ttl-ms", "60000"});
        REQUIRE(acquired.status == 0);
        const std::string value = mistakes_value_of(acquired);

        const auto released = redlock({"release", "-r", "doc", "--value", value});
        CHECK(released.status == 1);
        CHECK(mistakes_contains(released.err, "held as a reader: add --shared"));
        const auto machine = redlock({"--json", "release", "-r", "doc", "--value", value});
        CHECK(machine.status == 1);
        const json error = one_object(machine).at("error");
        CHECK(error.at("code") == "not_held");
        CHECK(error.at("hint") == "this value is held as a reader: add --shared");

        const auto extended =
            redlock({"extend", "-r", "doc", "--value", value, "--ttl-ms", "60000"});
        CHECK(extended.status == 1);
        CHECK(mistakes_contains(extended.err, "held as a reader: add --shared"));

        CHECK(redlock({"release", "-r", "doc", "--value", value, "--shared"}).status == 0);
        // Released: no hint for a value that holds nothing.
        const auto again = redlock({"release", "-r", "doc", "--value", value});
        CHECK(again.status == 1);
        CHECK_FALSE(mistakes_contains(again.err, "held as"));
    }

    TEST_CASE_FIXTURE(mistakes_cluster, "a permit's value without --permits is told its count") {
        const auto acquired =
            redlock({"acquire", "--permits", "2", "-r", "gpu", "--ttl-ms", "60000"});
        REQUIRE(acquired.status == 0);
        const std::string value = mistakes_value_of(acquired);

        const auto released = redlock({"release", "-r", "gpu", "--value", value});
        CHECK(released.status == 1);
        CHECK(mistakes_contains(released.err, "held as one of 2 permits: add --permits 2"));

        const auto extended =
            redlock({"extend", "-r", "gpu", "--value", value, "--ttl-ms", "60000"});
        CHECK(extended.status == 1);
        CHECK(mistakes_contains(extended.err, "held as one of 2 permits: add --permits 2"));

        const auto shared = redlock({"release", "-r", "gpu", "--value", value, "--shared"});
        CHECK(shared.status == 1);
        CHECK(mistakes_contains(shared.err,
                                "held as one of 2 permits: use --permits 2, not --shared"));

        CHECK(redlock({"release", "-r", "gpu", "--value", value, "--permits", "2"}).status == 0);
    }

    TEST_CASE_FIXTURE(mistakes_cluster,
                      "status without --permits shows the permits that hold a resource") {
        for (int i = 0; i < 2; ++i)
            REQUIRE(
                redlock({"acquire", "--permits", "2", "-r", "gpu", "--ttl-ms", "60000"}).status ==
                0);

        const auto human = redlock({"status", "-r", "gpu"});
        CHECK(human.status == 0);
        CHECK(mistakes_contains(human.out, "2 of 2 permits held"));
        CHECK_FALSE(mistakes_contains(human.out, "free"));

        const auto machine = redlock({"--json", "status", "-r", "gpu"});
        CHECK(machine.status == 0);
        const json status = one_object(machine);
        CHECK(status.at("permits") == 2);
        CHECK(status.at("held") == 2);
        CHECK(status.at("permits_from_nodes") == true);
        CHECK(status.at("holders").size() == 2);

        // A resource nobody holds is still free.
        const auto free = redlock({"status", "-r", "nobody"});
        CHECK(free.status == 0);
        CHECK(mistakes_contains(free.out, "free"));
    }

    // ---- 5: a semaphore count that disagrees ---------------------------------------------------

    TEST_CASE_FIXTURE(mistakes_cluster, "a semaphore count that disagrees is named on every node") {
        REQUIRE(redlock({"acquire", "--permits", "2", "-r", "sem2", "--ttl-ms", "60000"}).status ==
                0);

        const auto machine = redlock({"--json", "acquire", "-r", "sem2", "--permits", "3"});
        CHECK(machine.status == 64);
        const json error = one_object(machine).at("error");
        CHECK(error.at("code") == "invalid_argument");
        REQUIRE(error.at("nodes").size() == 5);
        for (const auto& n : error.at("nodes")) {
            INFO(n.dump());
            CHECK(mistakes_contains(n.at("detail"), "this semaphore with 2 permits"));
            CHECK_FALSE(mistakes_contains(n.at("detail"), "unexpected"));
        }
        CHECK_FALSE(mistakes_contains(error.at("message"), "unexpected array reply"));
    }

    // ---- 7: a stale extend ----------------------------------------------------------------------

    TEST_CASE_FIXTURE(mistakes_cluster, "an extend of an expired lock says that it expired") {
        const auto acquired = redlock({"acquire", "-r", "brief", "--ttl-ms", "200"});
        REQUIRE(acquired.status == 0);
        // Expired on every node (its TTL, 200 ms, ran out there), not only by our clock.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return count_holding(key_of("brief")) == 0; }));
        const auto extended = redlock(
            {"extend", "-r", "brief", "--value", mistakes_value_of(acquired), "--ttl-ms", "5000"});
        CHECK(extended.status == 1);
        CHECK(mistakes_contains(extended.err, "it expired or was released"));
        CHECK_FALSE(mistakes_contains(extended.err, "stays valid until its previous deadline"));
    }

    // ---- 8: check --strict
    // -----------------------------------------------------------------------

    TEST_CASE_FIXTURE(mistakes_cluster, "check --strict fails when a node can lose writes") {
        // The fixture's nodes run without AOF.
        const auto human = redlock({"check", "--strict"});
        CHECK(human.status == 1);
        CHECK(mistakes_contains(human.out, "CAN LOSE WRITES"));  // the table, still
        CHECK(mistakes_contains(human.err, "--strict: 5 of 5 nodes can lose acknowledged writes"));
        const auto machine = redlock({"--json", "check", "--strict"});
        CHECK(machine.status == 1);
        const json health = one_object(machine);
        CHECK(health.at("error").at("code") == "unsafe_nodes");
        CHECK(health.at("nodes").size() == 5);
        CHECK(redlock({"check"}).status == 0);  // without --strict: warnings only

        // Three nodes that persist every write pass.
        std::vector<redlock_test::redis_server> durable;
        for (int i = 0; i < 3; ++i)
            durable.emplace_back(redlock_test::persisting_every_write("cli-strict"));
        json settings = json::parse(slurp(config));
        settings["nodes"] = json::array();
        for (const auto& s : durable)
            settings["nodes"].push_back({{"host", "127.0.0.1"}, {"port", s.port()}});
        const auto safe = dir / "safe.json";
        std::ofstream{safe} << settings.dump();
        const auto passed = redlock({"check", "--strict", "--config", safe.string()});
        CHECK(passed.status == 0);
        CHECK(mistakes_contains(passed.out, "ok"));
    }
}
