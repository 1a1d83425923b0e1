// `redlock check` on cluster and Sentinel members (issue 38, items 4 to 6), against real Redis
// Clusters, Sentinels and masters on loopback ports: --strict judges every master of a cluster,
// a master that is down shows as DOWN (not "not connected") and its member no longer counts
// toward the quorum; a member that can never serve as configured exits 78, and acquire says
// "configuration" (78) rather than quorum_unreachable (69); replicas without wait_replicas are
// warned of; the Sentinel master's failover is shown with its age.
#include "cli/cli_process.hpp"
#include "support/cluster.hpp"
#include "support/cluster_member.hpp"
#include "support/sentinel_member.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using nlohmann::json;
using redlock_test::cli_process;
using redlock_test::cli_result;
using redlock_test::one_object;

namespace {

namespace fs = std::filesystem;

auto check_has(const std::string& text, const std::string& part) -> bool {
    return text.find(part) != std::string::npos;
}

auto check_addresses(const std::vector<redlock::node_address>& nodes) -> json {
    auto list = json::array();
    for (const auto& n : nodes) list.push_back({{"host", n.host}, {"port", n.port}});
    return list;
}

/// A temp dir for config files, and `redlock --config <file>` run against them.
class check_files {
public:
    check_files()
        : dir{fs::temp_directory_path() / ("redlock-cli-check-members-" + std::to_string(getpid()) +
                                           "-" + std::to_string(counter_++))} {
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    check_files(const check_files&) = delete;
    auto operator=(const check_files&) -> check_files& = delete;
    ~check_files() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }

    /// `members` with the settings routed members need, written to `name`.
    auto write(const std::string& name, json members) const -> fs::path {
        members["connect_timeout_ms"] = redlock_test::scaled(1000ms).count();
        members["request_timeout_ms"] = redlock_test::scaled(300ms).count();
        members["lock"] = {{"ttl_ms", 5000}};
        members["retry"] = {{"attempts", 2}, {"delay_ms", 50}, {"jitter_ms", 50}};
        members["reconnect"] = {{"min_delay_ms", 20}, {"max_delay_ms", 200}};
        const fs::path file = dir / name;
        std::ofstream{file} << members.dump(2);
        return file;
    }

    auto redlock(const fs::path& config, std::vector<std::string> args) const -> cli_result {
        args.insert(args.begin(), {"--config", config.string()});
        return cli_process{args, dir}.wait(60s);
    }

    fs::path dir;

private:
    static inline std::atomic<int> counter_{0};
};

void persisting(const redlock_test::redis_server& server) {
    REQUIRE(server.command({"CONFIG", "SET", "appendonly", "yes"}));
    REQUIRE(server.command({"CONFIG", "SET", "appendfsync", "always"}));
}

/// The line of the table that starts with the member's name.
auto member_line(const std::string& table, const std::string& name) -> std::string {
    const auto at = table.find("  " + name + " ");
    if (at == std::string::npos) return {};
    return table.substr(at, table.find('\n', at) - at);
}

}  // namespace

TEST_SUITE("cli check members") {
    TEST_CASE(
        "check on a cluster member: --strict judges every master, a master down is DOWN, "
        "and the member stops counting toward the quorum") {
        redlock_test::cluster standalone{2};
        redlock_test::cluster_member shards{
            {.shards = 3, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
        for (std::size_t i = 0; i < 2; ++i) persisting(standalone[i]);
        for (std::size_t i = 0; i < 3; ++i) persisting(shards.node(i));
        const check_files files;
        const auto config = files.write(
            "cluster.json",
            {{"nodes", check_addresses(standalone.config().nodes)},
             {"clusters", json::array({{{"seeds", check_addresses(shards.seeds())}}})}});
        const std::string member = "cluster " + shards.seeds().front().to_string();
        const std::string second = shards.node(1).address().to_string();

        const auto safe = files.redlock(config, {"check", "--strict"});
        INFO("check --strict: " << safe.out << safe.err);
        CHECK(safe.status == 0);
        CHECK(check_has(member_line(safe.out, member), " up  rtt "));

        // A master other than the seed that does not persist every write: --strict fails.
        REQUIRE(shards.node(1).command({"CONFIG", "SET", "appendfsync", "everysec"}));
        const auto strict = files.redlock(config, {"check", "--strict"});
        INFO("check --strict: " << strict.out << strict.err);
        CHECK(strict.status == 1);
        CHECK(check_has(strict.err, member + " (" + second + ": appendfsync everysec)"));
        CHECK(check_has(strict.out, "master " + second + ": "));

        // It dies: the cluster fails (cluster_state:fail) and check says so, master by master.
        shards.node(1).crash();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(15s), [&] {
            const auto info = shards.node(0).command({"CLUSTER", "INFO"});
            return info && check_has(*info, "cluster_state:fail");
        }));
        const auto down = files.redlock(config, {"check"});
        INFO("check: " << down.out << down.err);
        CHECK(down.status == 0);  // the two standalone masters are a quorum
        CHECK(check_has(member_line(down.out, member), "DEGRADED"));
        CHECK(check_has(down.out, "      master " + second + ": "));
        CHECK(check_has(down.out, "DOWN ("));
        CHECK(check_has(down.out, "cluster_state:fail"));
        CHECK_FALSE(check_has(down.out, "not connected"));
        CHECK(check_has(down.out, "2 of 3 nodes can take every lock (3 reachable), quorum 2: ok"));
        CHECK(check_has(down.err, "warning: " + member + " cannot take every lock now: master " +
                                      second + " is down ("));
        const auto machine = files.redlock(config, {"--json", "check"});
        CHECK(machine.status == 0);
        const json health = one_object(machine);
        CHECK(health.at("serving") == 2);
        CHECK(health.at("reachable") == 3);
        const json& node = health.at("nodes").at(2);
        CHECK(node.at("serving") == false);
        CHECK(node.at("cluster_state") == "fail");
        CHECK(node.at("masters").at(1).at("address") == second);
        CHECK(node.at("masters").at(1).at("reachable") == false);
        CHECK(node.at("unserved_slot_count") == node.at("masters").at(1).at("slot_count"));

        // One standalone master down too: no quorum, and the message says why.
        standalone[1].crash();
        const auto lost = files.redlock(config, {"check"});
        CHECK(lost.status == 69);
        CHECK(check_has(lost.err, "only 1 of 3 nodes can take every lock (2 are reachable; " +
                                      member + ": master " + second + " is down ("));
    }

    TEST_CASE(
        "a member that can never serve as configured: check exits 78 and names it, "
        "acquire says configuration") {
        redlock_test::cluster standalone{3};
        redlock_test::sentinel_member managed;
        const check_files files;
        const json nodes = check_addresses(standalone.config().nodes);
        const std::string seed = standalone[2].address().to_string();
        const auto not_cluster =
            files.write("not-cluster.json",
                        {{"nodes", json::array({nodes[0], nodes[1]})},
                         {"clusters", json::array({{{"seeds", json::array({nodes[2]})}}})}});
        const auto human = files.redlock(not_cluster, {"check"});
        INFO("check: " << human.out << human.err);
        CHECK(human.status == 78);
        CHECK(check_has(member_line(human.out, "cluster " + seed), "MISCONFIGURED: "));
        CHECK(check_has(human.err, "redlock: configuration: cluster " + seed +
                                       ": no slot map from any seed (" + seed +
                                       ": is not in cluster mode"));
        const auto machine = files.redlock(not_cluster, {"--json", "check"});
        CHECK(machine.status == 78);
        const json health = one_object(machine);
        CHECK(health.at("error").at("code") == "invalid_config");
        CHECK(health.at("misconfigured") == 1);
        CHECK(health.at("nodes").at(2).at("configuration_errors").size() == 1);

        const json sentinels = check_addresses(managed.sentinels());
        const auto unknown = files.write(
            "unknown.json",
            {{"nodes", json::array({nodes[0]})},
             {"sentinel_masters",
              json::array({{{"sentinels", sentinels}, {"master_name", "nobody-knows-me"}}})}});
        const auto nameless = files.redlock(unknown, {"check"});
        INFO("check: " << nameless.out << nameless.err);
        CHECK(nameless.status == 78);
        CHECK(check_has(nameless.err, "no sentinel knows a master named \"nobody-knows-me\""));

        const auto too_many = files.write(
            "wait.json", {{"nodes", json::array({nodes[0], nodes[1]})},
                          {"sentinel_masters", json::array({{{"sentinels", sentinels},
                                                             {"master_name", managed.master_name()},
                                                             {"wait_replicas", 2}}})}});
        const auto waits = files.redlock(too_many, {"check"});
        INFO("check: " << waits.out << waits.err);
        CHECK(waits.status == 78);
        CHECK(check_has(waits.err,
                        "wait_replicas 2, but master \"" + managed.master_name() + "\" at "));
        CHECK(check_has(waits.err, " has 1 replica"));

        // Without /nodes/1 the quorum needs the misconfigured member: acquire and run say
        // "configuration" and exit 78, not quorum_unreachable's 69.
        standalone[1].crash();
        const auto acquired = files.redlock(not_cluster, {"--json", "acquire", "-r", "deploy"});
        CHECK(acquired.status == 78);
        const json error = one_object(acquired).at("error");
        CHECK(error.at("code") == "invalid_config");
        CHECK(check_has(error.at("message"), "configuration: cluster " + seed +
                                                 " can never grant a lock as configured"));
        const auto ran = files.redlock(not_cluster, {"run", "-r", "deploy", "--", "true"});
        CHECK(ran.status == 78);
        CHECK(check_has(ran.err, "configuration: "));
        const auto named = files.redlock(unknown, {"acquire", "-r", "deploy"});
        CHECK(named.status == 78);
    }

    TEST_CASE(
        "check on a Sentinel member: the warning without wait_replicas, and how long ago "
        "the master took its role") {
        redlock_test::cluster standalone{2};
        redlock_test::sentinel_member managed;
        const check_files files;
        const json nodes = check_addresses(standalone.config().nodes);
        const json sentinel = {{"sentinels", check_addresses(managed.sentinels())},
                               {"master_name", managed.master_name()}};
        const auto plain = files.write(
            "plain.json", {{"nodes", nodes}, {"sentinel_masters", json::array({sentinel})}});
        const std::string member = "sentinel master \"" + managed.master_name() + "\"";

        const auto before = files.redlock(plain, {"check"});
        INFO("check: " << before.out << before.err);
        CHECK(before.status == 0);
        CHECK(check_has(before.err, "warning: " + member +
                                        ": its masters have replicas (1 in all) and it has no "
                                        "wait_replicas"));
        CHECK(check_has(before.out, "failover: no failover since the sentinels began to monitor"));
        CHECK(check_has(before.out,
                        "replicas " +
                            managed.server(1 - managed.master_index()).address().to_string() +
                            " (online"));

        managed.failover();
        const std::string promoted = managed.server(managed.master_index()).address().to_string();
        const auto after = files.redlock(plain, {"--json", "check"});
        CHECK(after.status == 0);
        const json node = one_object(after).at("nodes").at(2);
        bool took = false;
        for (const auto& f : node.at("failovers"))
            took = took || (check_has(f, "master " + promoted + " took its role ") &&
                            check_has(f, "chosen by a failover"));
        CHECK_MESSAGE(took, node.dump());
        CHECK(node.at("warnings").size() == 1);

        json guarded = sentinel;
        guarded["wait_replicas"] = 1;
        const auto waits = files.write(
            "waits.json", {{"nodes", nodes}, {"sentinel_masters", json::array({guarded})}});
        const auto quiet = files.redlock(waits, {"check"});
        CHECK(quiet.status == 0);
        CHECK_FALSE(check_has(quiet.err, "no wait_replicas"));
    }
}
