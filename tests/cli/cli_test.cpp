// The `redlock` binary, run as scripts run it: real processes against real
// servers, exit codes and output checked from the outside.
#include "cli/cli_process.hpp"
#include "support/cluster.hpp"
#include "support/port_holder.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using nlohmann::json;
using redlock_test::cli_process;
using redlock_test::cli_result;
using redlock_test::one_object;
using redlock_test::port_holder;
using redlock_test::quoted;
using redlock_test::slurp;

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& file, const std::string& text) {
    std::ofstream{file} << text;
}

/// Five masters, a temp dir, and a config file pointing at the masters.
class cli_cluster : public redlock_test::cli_fixture {
public:
    // Generous timeouts: every invocation is a fresh process, and these cases are
    // about the CLI, not about nodes that answer slowly on a loaded machine.
    cli_cluster()
        : cli_fixture{"redlock-cli-tests-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 2000}} {}
};

/// A `sh -c` script that signals it has started (file `started`), then loops
/// until killed; a TERM trap, if given, runs `trap_action`.
auto waiting_script(const fs::path& started, const std::string& trap_action = "") -> std::string {
    std::string script;
    if (!trap_action.empty()) script += "trap " + quoted(trap_action) + " TERM; ";
    return script + "echo started > " + quoted(started.string()) + "; while :; do sleep 0.05; done";
}

}  // namespace

TEST_SUITE("cli") {
    // ---- acquire, status, extend, release across invocations --------------------------------

    TEST_CASE_FIXTURE(cli_cluster, "a value acquired by one invocation is released by another") {
        const auto acquired = redlock({"--json", "acquire", "--resource", "deploy"});
        REQUIRE(acquired.status == 0);
        const json lock = one_object(acquired);
        const std::string value = lock.at("value");
        CHECK(lock.at("resource") == "deploy");
        CHECK(lock.at("validity_ms").get<long long>() > 0);
        CHECK(lock.at("validity_ms").get<long long>() <= 2000);
        CHECK(lock.at("fence").is_null());
        // A majority at least. The process exits once a majority granted; a node that
        // had not yet answered its connection's handshake is never sent the SET.
        const int holders = count_holding(key_of("deploy"), value);
        CHECK(holders >= 3);

        const auto released =
            redlock({"--json", "release", "--resource", "deploy", "--value", value});

        REQUIRE(released.status == 0);
        const json report = one_object(released);
        // A node may still be answering when the release is decided (then "pending").
        CHECK(report.at("released").get<int>() + report.at("pending").get<int>() >= holders);
        REQUIRE(report.at("nodes").size() == 5);
        for (const auto& n : report.at("nodes")) {
            CHECK((n.at("status") == "ok" || n.at("status") == "pending" ||
                   n.at("status") == "refused"));
        }
        // The process waited for the pending ones before it exited.
        CHECK(count_holding(key_of("deploy")) == 0);
    }

    TEST_CASE_FIXTURE(cli_cluster, "releasing a value that holds nothing exits 1 with not_held") {
        const auto released =
            redlock({"--json", "release", "--resource", "deploy", "--value", "0123456789abcdef"});

        CHECK(released.status == 1);
        const json report = one_object(released);
        CHECK(report.at("error").at("code") == "not_held");
        CHECK(report.at("error").at("released") == 0);  // one error object (release --help)
        CHECK_FALSE(report.contains("released"));
    }

    TEST_CASE_FIXTURE(cli_cluster, "acquire without --json prints the value alone on stdout") {
        const auto acquired = redlock({"acquire", "--resource", "deploy"});

        REQUIRE(acquired.status == 0);
        // 32 hex digits, "|", the holder text (HOST:PID (redlock)) and a newline.
        REQUIRE(acquired.out.find('\n') == acquired.out.size() - 1);
        const std::string value = acquired.out.substr(0, acquired.out.size() - 1);
        CHECK(value.substr(32).starts_with("|"));
        CHECK(value.ends_with("(redlock)"));
        CHECK(acquired.out.back() == '\n');
        // A majority at least: the process exits once a majority granted (see above).
        CHECK(count_holding(key_of("deploy"), value) >= 3);
        CHECK(acquired.err.find("acquired 'deploy'") != std::string::npos);
    }

    TEST_CASE_FIXTURE(cli_cluster, "extend by value lengthens the lock on every node") {
        const std::string value =
            one_object(redlock({"--json", "acquire", "--resource", "deploy"})).at("value");

        const auto extended = redlock(
            {"--json", "extend", "--resource", "deploy", "--value", value, "--ttl-ms", "30000"});

        REQUIRE(extended.status == 0);
        const long long validity = one_object(extended).at("validity_ms");
        CHECK(validity > 25000);
        CHECK(validity <= 30000);
        for (const auto& s : *this) CHECK(s.pttl(key_of("deploy")) > 20000);
    }

    TEST_CASE_FIXTURE(cli_cluster, "extend of a value that holds nothing exits 1 with not_held") {
        const auto extended = redlock({"--json", "extend", "--resource", "deploy", "--value",
                                       "0123456789abcdef", "--ttl-ms", "5000"});

        CHECK(extended.status == 1);
        CHECK(one_object(extended).at("error").at("code") == "not_held");
    }

    TEST_CASE_FIXTURE(cli_cluster, "status shows the holder and that a quorum agrees on it") {
        const json lock =
            one_object(redlock({"--json", "acquire", "--resource", "deploy", "--fence"}));
        const std::string value = lock.at("value");
        REQUIRE(lock.at("fence").is_number_unsigned());

        const auto status = redlock({"--json", "status", "--resource", "deploy"});

        REQUIRE(status.status == 0);
        const json view = one_object(status);
        CHECK(view.at("resource") == "deploy");
        CHECK(view.at("holder") == value);
        CHECK(view.at("agreed") == true);
        CHECK(view.at("quorum") == 3);
        CHECK(view.at("fence") == lock.at("fence"));
        REQUIRE(view.at("nodes").size() == 5);
        for (const auto& n : view.at("nodes")) {
            CHECK(n.at("reachable") == true);
            CHECK(n.at("holder") == value);
            CHECK(n.at("ttl_ms").get<long long>() > 0);
            CHECK(n.at("fence") == lock.at("fence"));
        }
        const auto human = redlock({"status", "--resource", "deploy"});
        CHECK(human.status == 0);
        // The holder text first (HOST:PID (redlock)), then the whole value.
        CHECK(human.out.find("held by " + value.substr(33) + " [value " + value + "]") !=
              std::string::npos);
    }

    TEST_CASE_FIXTURE(cli_cluster, "status of a free resource has no holder and no agreement") {
        const auto status = redlock({"--json", "status", "--resource", "nobody"});

        REQUIRE(status.status == 0);
        const json view = one_object(status);
        CHECK(view.at("holder").is_null());
        CHECK(view.at("agreed") == false);
        for (const auto& n : view.at("nodes")) CHECK(n.at("holder").is_null());
    }

    // ---- check -------------------------------------------------------------------------------

    TEST_CASE_FIXTURE(cli_cluster,
                      "check exits 0 with five nodes and warns that they can lose writes") {
        const auto checked = redlock({"--json", "check"});

        REQUIRE(checked.status == 0);
        const json health = one_object(checked);
        CHECK(health.at("quorum") == 3);
        CHECK(health.at("reachable") == 5);
        CHECK(health.at("quorum_reachable") == true);
        CHECK(health.at("servers") == 5);
        CHECK(health.at("duplicate_servers") == json::array());
        REQUIRE(health.at("nodes").size() == 5);
        for (const auto& n : health.at("nodes")) {
            CHECK(n.at("reachable") == true);
            CHECK(n.at("redis_version").get<std::string>().size() > 0);
            CHECK(n.at("role") == "master");
            CHECK(n.at("round_trip_ms").get<double>() >= 0.0);
            CHECK(n.at("can_lose_writes") == true);  // the test nodes run without AOF
        }
        REQUIRE(health.at("warnings").size() >= 1);
        CHECK(health.at("warnings")[0].get<std::string>().find("can lose acknowledged writes") !=
              std::string::npos);

        const auto human = redlock({"check"});
        CHECK(human.status == 0);
        CHECK(human.out.find("CAN LOSE WRITES") != std::string::npos);
        CHECK(human.err.find("warning: can lose acknowledged writes") != std::string::npos);
    }

    TEST_CASE_FIXTURE(cli_cluster, "check exits 78 when two nodes are one server (same run_id)") {
        // /nodes/1 is /nodes/0 through its Unix socket: nothing in the spelling tells,
        // validation accepts it, and only the run_id in INFO server gives it away.
        redlock_test::server_options with_socket;
        with_socket.unix_socket = true;
        const redlock_test::redis_server both{with_socket};
        const auto twice = dir / "twice.json";
        json settings = json::parse(slurp(config));
        settings["nodes"] = json::array({{{"host", "127.0.0.1"}, {"port", both.port()}},
                                         {{"unix", both.unix_socket().string()}},
                                         {{"host", "127.0.0.1"}, {"port", node(0).port()}}});
        write_file(twice, settings.dump());
        const std::string tcp_name = "127.0.0.1:" + std::to_string(both.port());
        const std::string unix_name = "unix:" + both.unix_socket().string();

        const auto machine = redlock({"--json", "check", "--config", twice.string()});
        const auto human = redlock({"check", "--config", twice.string()});

        CHECK(machine.status == 78);
        const json health = one_object(machine);
        CHECK(health.at("error").at("code") == "duplicate_server");
        const std::string message = health.at("error").at("message");
        CHECK(message.find("/nodes/0 (" + tcp_name + ") and /nodes/1 (" + unix_name +
                           ") are one server") != std::string::npos);
        CHECK(message.find("the 3 nodes are 2 servers") != std::string::npos);
        CHECK(message.find("a quorum of 2 survives 0 failed server(s), not 1") !=
              std::string::npos);
        CHECK(health.at("reachable") == 3);
        CHECK(health.at("servers") == 2);
        REQUIRE(health.at("duplicate_servers").size() == 1);
        const json& group = health.at("duplicate_servers")[0];
        CHECK(group.at("nodes") == json::array({tcp_name, unix_name}));
        CHECK(group.at("fields") == json::array({"/nodes/0", "/nodes/1"}));
        CHECK(group.at("run_id").get<std::string>().size() == 40);
        CHECK(group.at("run_id") == health.at("nodes")[0].at("run_id"));

        CHECK(human.status == 78);
        CHECK(human.out.find(unix_name) != std::string::npos);  // the table, still
        CHECK(human.out.find("SAME SERVER AS " + tcp_name) != std::string::npos);
        CHECK(human.err.find("redlock: /nodes/0 (" + tcp_name + ") and /nodes/1 (" + unix_name +
                             ") are one server") != std::string::npos);
        CHECK(human.err.find("warning: can lose acknowledged writes") != std::string::npos);
    }

    // ---- 69: a quorum unreachable -------------------------------------------------------------

    TEST_CASE_FIXTURE(cli_cluster, "with 3 of 5 nodes crashed, every subcommand exits 69") {
        std::vector<std::unique_ptr<port_holder>> dead;
        for (std::size_t i : {0U, 1U, 2U}) {
            node(i).crash();
            dead.push_back(std::make_unique<port_holder>(node(i).port()));
        }

        const auto acquired = redlock({"--json", "acquire", "--resource", "deploy"});
        const auto checked = redlock({"--json", "check"});
        const auto human = redlock({"check"});
        const auto status = redlock({"--json", "status", "--resource", "deploy"});
        const auto released =
            redlock({"--json", "release", "--resource", "deploy", "--value", "0123456789abcdef"});
        const auto ran = redlock({"--json", "run", "--resource", "deploy", "--", "true"});

        CHECK(acquired.status == 69);
        CHECK(one_object(acquired).at("error").at("code") == "quorum_unreachable");
        CHECK(checked.status == 69);
        const json health = one_object(checked);
        CHECK(health.at("error").at("code") == "quorum_unreachable");
        CHECK(health.at("reachable") == 2);
        CHECK(human.status == 69);
        CHECK(human.err.find("2 of 5 nodes are reachable") != std::string::npos);
        CHECK(human.out.find("unreachable") != std::string::npos);  // the table, still
        CHECK(status.status == 69);
        CHECK(one_object(status).at("error").at("code") == "quorum_unreachable");
        CHECK(released.status == 69);
        CHECK(one_object(released).at("error").at("code") == "quorum_unreachable");
        CHECK(ran.status == 69);
        CHECK(one_object(ran).at("error").at("code") == "quorum_unreachable");
    }

    // ---- 75: not acquired within --wait-ms ----------------------------------------------------

    TEST_CASE_FIXTURE(cli_cluster, "a held lock makes acquire --wait-ms 300 give up with 75") {
        REQUIRE(redlock({"acquire", "--resource", "deploy", "--ttl-ms", "10000"}).status == 0);

        const auto second =
            redlock({"--json", "acquire", "--resource", "deploy", "--wait-ms", "300"});

        CHECK(second.status == 75);
        CHECK(one_object(second).at("error").at("code") == "contended");
        CHECK(second.took >= 250ms);  // the last attempt starts no later than the deadline
        CHECK(second.took < redlock_test::scaled(5s));
    }

    // ---- 78: bad config -----------------------------------------------------------------------

    TEST_CASE_FIXTURE(cli_cluster, "a config that is not valid JSON exits 78 and names the file") {
        const auto bad = dir / "broken.json";
        write_file(bad, "{ \"nodes\": [ ");

        const auto human = redlock({"check", "--config", bad.string()});
        const auto machine = redlock({"--json", "check", "--config", bad.string()});

        CHECK(human.status == 78);
        CHECK(human.err.find(bad.string()) != std::string::npos);
        CHECK(human.out.empty());
        CHECK(machine.status == 78);
        const json error = one_object(machine).at("error");
        CHECK(error.at("code") == "invalid_config");
        CHECK(error.at("message").get<std::string>().find(bad.string()) != std::string::npos);
    }

    TEST_CASE_FIXTURE(cli_cluster, "an unknown config field exits 78 and names the field") {
        const auto bad = dir / "typo.json";
        json settings = json::parse(slurp(config));
        settings["lock"]["ttl_msec"] = 5000;
        write_file(bad, settings.dump());

        const auto checked = redlock({"acquire", "--resource", "x", "--config", bad.string()});

        CHECK(checked.status == 78);
        CHECK(checked.err.find("/lock/ttl_msec") != std::string::npos);
        CHECK(checked.err.find(bad.string()) != std::string::npos);
    }

    TEST_CASE_FIXTURE(cli_cluster, "a missing config file exits 78") {
        const auto missing = (dir / "nowhere.json").string();

        const auto checked = redlock({"--json", "check", "--config", missing});

        CHECK(checked.status == 78);
        CHECK(one_object(checked).at("error").at("message").get<std::string>().find(missing) !=
              std::string::npos);
    }

    TEST_CASE_FIXTURE(cli_cluster, "without --config the file comes from REDLOCK_CONFIG") {
        cli_process checked{{"--json", "check"}, dir, {"REDLOCK_CONFIG=" + config.string()}};

        const auto result = checked.wait();

        CHECK(result.status == 0);
        CHECK(one_object(result).at("reachable") == 5);
    }

    // ---- 64: bad usage ------------------------------------------------------------------------

    TEST_CASE_FIXTURE(cli_cluster, "usage errors exit 64") {
        const std::vector<std::vector<std::string>> misuses{
            {},                                                             // no subcommand
            {"launch"},                                                     // unknown subcommand
            {"acquire"},                                                    // no --resource
            {"acquire", "--resource", "x", "--bogus"},                      // unknown flag
            {"acquire", "--resource", "x", "--ttl-ms", "0"},                // out of range
            {"acquire", "--resource", "x", "--wait-ms", "soon"},            // not a number
            {"run", "--resource", "x"},                                     // no -- CMD
            {"run", "--resource", "x", "--"},                               // empty CMD
            {"run", "--resource", "x", "--on-lost", "pray", "--", "true"},  // bad --on-lost
            {"status", "--resource", "x", "--", "true"},                    // CMD for a non-run
            {"extend", "--resource", "x", "--value", "v"},                  // no --ttl-ms
        };
        for (const auto& args : misuses) {
            std::string line;
            for (const auto& a : args) line += a + " ";
            INFO("redlock " << line);
            auto human_args = args;
            const auto human = redlock(human_args);
            CHECK(human.status == 64);
            CHECK(human.out.empty());
            CHECK_FALSE(human.err.empty());

            auto json_args = args;
            json_args.insert(json_args.begin(), "--json");
            const auto machine = redlock(json_args);
            CHECK(machine.status == 64);
            CHECK(one_object(machine).at("error").at("code") == "usage");
        }
    }

    TEST_CASE_FIXTURE(cli_cluster, "every subcommand's --help exits 0 and lists its exit codes") {
        for (const char* sub : {"run", "acquire", "release", "extend", "status", "check"}) {
            INFO(sub);
            const auto help = redlock({sub, "--help"});
            CHECK(help.status == 0);
            CHECK(help.out.find("Exit codes") != std::string::npos);
            CHECK(help.out.find("--config") != std::string::npos);
        }
        const auto top = redlock({"--help"});
        CHECK(top.status == 0);
        CHECK(top.out.find("75") != std::string::npos);
    }

    // ---- run: the command's status ------------------------------------------------------------

    TEST_CASE_FIXTURE(cli_cluster, "run exits with the command's exit status") {
        const auto ran = redlock({"run", "--resource", "job", "--", "sh", "-c", "exit 3"});

        CHECK(ran.status == 3);
        CHECK(count_holding(key_of("job")) == 0);
    }

    TEST_CASE_FIXTURE(cli_cluster, "run exits 128+N when the command is killed by signal N") {
        const auto ran = redlock({"run", "--resource", "job", "--", "sh", "-c", "kill -USR2 $$"});

        CHECK(ran.status == 128 + SIGUSR2);
    }

    TEST_CASE_FIXTURE(cli_cluster, "a command that cannot be found exits 127 and holds nothing") {
        const auto ran =
            redlock({"--json", "run", "--resource", "job", "--", "/no/such/command-here"});

        CHECK(ran.status == 127);
        CHECK(one_object(ran).at("error").at("code") == "cannot_execute");
        CHECK(count_holding(key_of("job")) == 0);
    }

    TEST_CASE_FIXTURE(cli_cluster,
                      "the command sees the lock in its environment while it is held") {
        const auto seen = dir / "seen";
        const auto status = dir / "status.json";
        const std::string script =
            "echo \"$REDLOCK_RESOURCE $REDLOCK_VALUE ${REDLOCK_FENCE-none}\" > " +
            quoted(seen.string()) + "; " + quoted(REDLOCK_CLI) + " --config " +
            quoted(config.string()) + " --json status --resource job > " + quoted(status.string());

        const auto ran =
            redlock({"--json", "run", "--resource", "job", "--fence", "--", "sh", "-c", script},
                    {"REDLOCK_FENCE=stale"});

        REQUIRE(ran.status == 0);
        const json report = one_object(ran);
        const std::string value = report.at("value");
        CHECK(report.at("child_status") == 0);
        // A node may still be answering when the release is decided (then "pending").
        CHECK(report.at("released").get<int>() + report.at("pending").get<int>() == 5);
        REQUIRE(report.at("fence").is_number_unsigned());
        CHECK(slurp(seen) == "job " + value + " " +
                                 std::to_string(report.at("fence").get<std::uint64_t>()) + "\n");
        const json view = json::parse(slurp(status));
        CHECK(view.at("holder") == value);
        CHECK(view.at("agreed") == true);
        CHECK(count_holding(key_of("job")) == 0);  // released when the command exited
    }

    TEST_CASE_FIXTURE(cli_cluster, "without --fence the command gets no REDLOCK_FENCE") {
        const auto seen = dir / "seen";

        const auto ran = redlock({"run", "--resource", "job", "--", "sh", "-c",
                                  "echo ${REDLOCK_FENCE-none} > " + quoted(seen.string())},
                                 {"REDLOCK_FENCE=stale"});

        CHECK(ran.status == 0);
        CHECK(slurp(seen) == "none\n");
    }

    // ---- run: mutual exclusion ----------------------------------------------------------------

    TEST_CASE_FIXTURE(cli_cluster, "eight concurrent runs on one resource never overlap") {
        const auto log = dir / "critical.log";
        const std::string section = "echo start $$ >> " + quoted(log.string()) +
                                    "; sleep 0.05; echo end $$ >> " + quoted(log.string());
        std::vector<std::unique_ptr<cli_process>> runs;
        for (int i = 0; i < 8; ++i) {
            runs.push_back(start(
                {"run", "--wait-ms", "20000", "--resource", "shared", "--", "sh", "-c", section}));
        }

        std::vector<int> statuses;
        for (auto& r : runs) statuses.push_back(r->wait(40s).status);

        CHECK(statuses == std::vector<int>(8, 0));
        std::istringstream lines{slurp(log)};
        std::vector<std::pair<std::string, std::string>> entries;
        for (std::string word, pid; lines >> word >> pid;) entries.emplace_back(word, pid);
        REQUIRE(entries.size() == 16);
        std::vector<std::string> pids;
        for (std::size_t i = 0; i < entries.size(); i += 2) {
            INFO("line " << i);
            CHECK(entries[i].first == "start");
            CHECK(entries[i + 1].first == "end");
            CHECK(entries[i].second == entries[i + 1].second);
            pids.push_back(entries[i].second);
        }
        std::sort(pids.begin(), pids.end());
        CHECK(std::unique(pids.begin(), pids.end()) == pids.end());  // eight distinct commands
    }

    // ---- run: 70, a lost lock -----------------------------------------------------------------

    TEST_CASE_FIXTURE(cli_cluster, "a lock lost while the command runs: SIGTERM to it, exit 70") {
        const auto started = dir / "started";
        const auto termed = dir / "termed";
        auto run =
            start({"--json", "run", "--resource", "job", "--ttl-ms", "600", "--", "sh", "-c",
                   waiting_script(started, "echo term > " + quoted(termed.string()) + "; exit 0")});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return fs::exists(started); }));

        for (std::size_t i : {0U, 1U, 2U}) node(i).freeze();
        const auto ran = run->wait(20s);
        for (std::size_t i : {0U, 1U, 2U}) node(i).thaw();

        CHECK(ran.status == 70);
        CHECK(slurp(termed) == "term\n");
        const json report = one_object(ran);
        CHECK(report.at("error").at("code") == "lock_lost");
        CHECK(report.at("child_status") == 0);  // 70 whatever the command returned
    }

    TEST_CASE_FIXTURE(cli_cluster, "--on-lost kill sends SIGKILL at once") {
        const auto started = dir / "started";
        const auto termed = dir / "termed";
        auto run = start({"--json", "run", "--resource", "job", "--ttl-ms", "600", "--on-lost",
                          "kill", "--", "sh", "-c",
                          waiting_script(started, "echo term > " + quoted(termed.string()))});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return fs::exists(started); }));

        for (std::size_t i : {0U, 1U, 2U}) node(i).freeze();
        const auto ran = run->wait(20s);
        for (std::size_t i : {0U, 1U, 2U}) node(i).thaw();

        CHECK(ran.status == 70);
        CHECK_FALSE(fs::exists(termed));
        CHECK(one_object(ran).at("child_signal") == SIGKILL);
    }

    TEST_CASE_FIXTURE(cli_cluster, "--on-lost ignore lets the command finish, and run exits 70") {
        const auto started = dir / "started";
        const auto finished = dir / "finished";
        auto run = start({"run", "--resource", "job", "--ttl-ms", "600", "--on-lost", "ignore",
                          "--", "sh", "-c",
                          "echo started > " + quoted(started.string()) + "; sleep 2; echo done > " +
                              quoted(finished.string())});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return fs::exists(started); }));

        for (std::size_t i : {0U, 1U, 2U}) node(i).freeze();
        const auto ran = run->wait(20s);
        for (std::size_t i : {0U, 1U, 2U}) node(i).thaw();

        CHECK(ran.status == 70);
        CHECK(slurp(finished) == "done\n");
        CHECK(ran.err.find("lost the lock") != std::string::npos);
    }

    TEST_CASE_FIXTURE(cli_cluster, "--on-lost term escalates to SIGKILL after --kill-after-ms") {
        const auto started = dir / "started";
        auto run = start({"--json", "run", "--resource", "job", "--ttl-ms", "600",
                          "--kill-after-ms", "300", "--", "sh", "-c",
                          waiting_script(started, ":")});  // the trap ignores SIGTERM
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return fs::exists(started); }));

        for (std::size_t i : {0U, 1U, 2U}) node(i).freeze();
        const auto ran = run->wait(20s);
        for (std::size_t i : {0U, 1U, 2U}) node(i).thaw();

        CHECK(ran.status == 70);
        CHECK(one_object(ran).at("child_signal") == SIGKILL);
    }

    // ---- run: signals -------------------------------------------------------------------------

    TEST_CASE_FIXTURE(cli_cluster,
                      "SIGTERM sent to run reaches the command and run exits with its status") {
        const auto started = dir / "started";
        const auto termed = dir / "termed";
        auto run =
            start({"run", "--resource", "job", "--", "sh", "-c",
                   waiting_script(started, "echo term > " + quoted(termed.string()) + "; exit 7")});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return fs::exists(started); }));

        run->signal(SIGTERM);
        const auto ran = run->wait(10s);

        CHECK(ran.status == 7);  // the trap's exit code: run exits with the command's status
        CHECK(slurp(termed) == "term\n");
        CHECK(count_holding(key_of("job")) == 0);
    }

    TEST_CASE_FIXTURE(cli_cluster, "SIGTERM kills a command without a trap: run exits 143") {
        const auto started = dir / "started";
        auto run = start({"run", "--resource", "job", "--", "sh", "-c",
                          "echo started > " + quoted(started.string()) + "; exec sleep 30"});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return fs::exists(started); }));

        run->signal(SIGTERM);
        const auto ran = run->wait(10s);

        CHECK(ran.status == 128 + SIGTERM);
        CHECK(count_holding(key_of("job")) == 0);
    }

    TEST_CASE_FIXTURE(cli_cluster, "SIGINT and SIGHUP are forwarded too") {
        for (int sig : {SIGINT, SIGHUP}) {
            INFO("signal " << sig);
            const auto started = dir / ("started-" + std::to_string(sig));
            auto run = start({"run", "--resource", "job", "--", "sh", "-c",
                              "echo started > " + quoted(started.string()) + "; exec sleep 30"});
            REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                             [&] { return fs::exists(started); }));

            run->signal(sig);

            CHECK(run->wait(10s).status == 128 + sig);
        }
    }

    TEST_CASE_FIXTURE(cli_cluster,
                      "a signal ignored by run's invoker stays ignored for the command") {
        const auto started = dir / "started";
        const auto survived = dir / "survived";
        const auto previous = std::signal(SIGHUP, SIG_IGN);  // as nohup does
        auto run =
            start({"run", "--resource", "job", "--", "sh", "-c",
                   "echo started > " + quoted(started.string()) +
                       "; sleep 0.3; kill -HUP $$; echo survived > " + quoted(survived.string())});
        std::signal(SIGHUP, previous);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return fs::exists(started); }));

        run->signal(SIGHUP);  // not forwarded, and no reason for run to stop
        const auto ran = run->wait(10s);

        CHECK(ran.status == 0);
        CHECK(slurp(survived) == "survived\n");
    }

    TEST_CASE_FIXTURE(cli_cluster, "a signal while waiting for the lock cancels the wait") {
        const std::string holder =
            one_object(redlock({"--json", "acquire", "--resource", "job", "--ttl-ms", "20000"}))
                .at("value");
        const auto ran_marker = dir / "ran";
        auto run = start({"--json", "run", "--resource", "job", "--wait-ms", "20000", "--", "sh",
                          "-c", "echo ran > " + quoted(ran_marker.string())});
        // Long enough to be past start-up and waiting; waiting itself has no outside sign.
        REQUIRE(redlock_test::holds_for(500ms, [&] { return run->running(); }));

        run->signal(SIGTERM);
        const auto ran = run->wait(5s);

        CHECK(ran.status == 128 + SIGTERM);
        CHECK(one_object(ran).at("error").at("code") == "interrupted");
        CHECK(ran.took < redlock_test::scaled(5s));
        CHECK_FALSE(fs::exists(ran_marker));
        // The holder's lock is untouched: still on a majority (a fresh `acquire`
        // exits once a majority granted, so a slow node may never have had it).
        CHECK(count_holding(key_of("job"), holder) >= 3);
    }
}
