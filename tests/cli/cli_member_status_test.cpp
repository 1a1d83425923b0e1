// `redlock status` on cluster and Sentinel members that fail, and configs that list one member
// twice (issue 38, items 8 and 9): status names the node of a member that failed, not the
// member's first seed; a cluster that answers CLUSTERDOWN is "unknown", never "free"; a config
// naming one cluster (or one Sentinel-managed master) twice is refused when it is loaded, with
// a JSON pointer of the file. Real Redis Clusters, Sentinels and masters on loopback ports.
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

auto member_has(const std::string& text, const std::string& part) -> bool {
    return text.find(part) != std::string::npos;
}

auto member_addresses(const std::vector<redlock::node_address>& nodes) -> json {
    auto list = json::array();
    for (const auto& n : nodes) list.push_back({{"host", n.host}, {"port", n.port}});
    return list;
}

/// A temp dir for config files, and `redlock --config <file>` run against them.
class member_configs {
public:
    member_configs()
        : dir{fs::temp_directory_path() / ("redlock-cli-member-status-" + std::to_string(getpid()) +
                                           "-" + std::to_string(counter_++))} {
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    member_configs(const member_configs&) = delete;
    auto operator=(const member_configs&) -> member_configs& = delete;
    ~member_configs() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }

    /// `members` with the settings routed members need, written to `name`.
    auto write(const std::string& name, json members) const -> fs::path {
        members["connect_timeout_ms"] = redlock_test::scaled(1000ms).count();
        members["request_timeout_ms"] = 250;
        members["lock"] = {{"ttl_ms", 5000}};
        members["retry"] = {{"attempts", 3}, {"delay_ms", 50}, {"jitter_ms", 50}};
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

/// A resource whose lock key's slot master `shards` node `master` serves.
auto resource_served_by(const redlock_test::cluster_member& shards, std::size_t master,
                        const std::string& prefix) -> std::string {
    for (int i = 0; i < 1000; ++i) {
        const std::string r = prefix + std::to_string(i);
        if (shards.master_of_slot(shards.key_slot(redlock_test::lock_key(r))) == master) return r;
    }
    FAIL("no resource found on master " << master);
    return {};
}

/// The JSON status entry of the member named `name`.
auto entry_of(const json& status, const std::string& name) -> json {
    for (const auto& n : status.at("nodes"))
        if (n.at("node") == name) return n;
    FAIL("no node " << name << " in " << status.dump());
    return {};
}

auto line_of(const std::string& table, const std::string& name) -> std::string {
    const auto at = table.find("  " + name + " ");
    if (at == std::string::npos) return {};
    return table.substr(at, table.find('\n', at) - at);
}

}  // namespace

TEST_SUITE("cli members") {
    TEST_CASE(
        "redlock with a Redis Cluster member: one cluster twice is refused at load, "
        "status names the node that failed, and CLUSTERDOWN is unknown, never free") {
        redlock_test::cluster standalone{2};
        redlock_test::cluster_member shards{
            {.shards = 3, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
        const member_configs files;
        const json nodes = member_addresses(standalone.config().nodes);
        const json seeds = member_addresses(shards.seeds());

        // ---- 9: the same cluster twice, and a seed that is also a node ----
        const auto twice = files.write(
            "twice.json", {{"nodes", json::array({nodes[0]})},
                           {"clusters", json::array({{{"seeds", json::array({seeds[0], seeds[1]})}},
                                                     {{"seeds", json::array({seeds[1]})}}})}});
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {"acquire", "-r", "deploy"}, {"check"}, {"status", "-r", "deploy"}}) {
            const auto refused = files.redlock(twice, args);
            INFO(args.front() << " stderr: " << refused.err);
            CHECK(refused.status == 78);
            CHECK(member_has(refused.err, twice.string() + ": /clusters/1/seeds/0: " +
                                              shards.seeds()[1].to_string() +
                                              " is also /clusters/0/seeds/1: the same Redis "
                                              "Cluster listed twice"));
            CHECK_FALSE(member_has(refused.err, "held by another owner"));
            CHECK_FALSE(member_has(refused.err, "SAME SERVER"));
            CHECK_FALSE(member_has(refused.err, "/nodes/"));
        }
        const auto as_node =
            files.write("as-node.json", {{"nodes", json::array({nodes[0], seeds[2]})},
                                         {"clusters", json::array({{{"seeds", seeds}}})}});
        const auto node_refused = files.redlock(as_node, {"--json", "acquire", "-r", "deploy"});
        CHECK(node_refused.status == 78);
        const json error = one_object(node_refused).at("error");
        CHECK(error.at("code") == "invalid_config");
        CHECK(member_has(error.at("message"),
                         "/clusters/0/seeds/2: " + shards.seeds()[2].to_string() +
                             " is also /nodes/1: one server cannot be both"));

        // The members themselves are fine: listed once, they lock.
        const auto config = files.write(
            "members.json", {{"nodes", nodes}, {"clusters", json::array({{{"seeds", seeds}}})}});
        const std::string member = "cluster " + shards.seeds()[0].to_string();
        const std::string held = resource_served_by(shards, 0, "held:");
        const auto acquired = files.redlock(config, {"acquire", "-r", held, "--ttl-ms", "60000"});
        INFO("acquire stderr: " << acquired.err);
        REQUIRE(acquired.status == 0);
        const std::string value = acquired.out.substr(0, acquired.out.find('\n'));
        // `acquire` exits once a majority granted: its last grant may never have left. The
        // extend puts the key back where it is missing, so that all three members hold it.
        CHECK(files.redlock(config, {"extend", "-r", held, "--value", value, "--ttl-ms", "60000"})
                  .status == 0);
        const std::string key = redlock_test::lock_key(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] {
            return shards.get(key) == value && standalone.count_holding(key, value) == 2;
        }));

        // ---- 8: a master that is not the first seed goes down ----
        const std::size_t victim = 1;
        const std::string victim_address = shards.node(victim).address().to_string();
        const std::string lost = resource_served_by(shards, victim, "lost:");
        shards.node(victim).crash();
        const auto down = files.redlock(config, {"--json", "status", "-r", lost});
        CHECK(down.status == 0);  // the two standalone masters answer
        const json down_entry = entry_of(one_object(down), member);
        CHECK(down_entry.at("reachable") == false);
        CHECK(down_entry.at("state") == "unreachable");
        CHECK_MESSAGE(member_has(down_entry.at("detail"), victim_address + ": "),
                      down_entry.dump());
        const auto down_text = files.redlock(config, {"status", "-r", lost});
        const std::string down_line = line_of(down_text.out, member);
        CHECK_MESSAGE(member_has(down_line, "unreachable: " + victim_address + ": "),
                      down_text.out);

        // ---- 8: the cluster lacks a slot's master: every node answers CLUSTERDOWN ----
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(15s), [&] {
            const auto info = shards.node(0).command({"CLUSTER", "INFO"});
            return info && member_has(*info, "cluster_state:fail");
        }));
        const std::string other = resource_served_by(shards, 2, "free:");
        const auto unknown = files.redlock(config, {"--json", "status", "-r", other});
        CHECK(unknown.status == 0);
        const json seen = one_object(unknown);
        const json entry = entry_of(seen, member);
        CHECK(entry.at("reachable") == true);
        CHECK(entry.at("state") == "unknown");
        CHECK(member_has(entry.at("detail"), "CLUSTERDOWN"));
        CHECK(seen.at("reachable") == 3);
        CHECK(seen.at("answered") == 2);
        const auto unknown_text = files.redlock(config, {"status", "-r", other});
        const std::string line = line_of(unknown_text.out, member);
        CHECK_MESSAGE(member_has(line, "unknown: CLUSTERDOWN"), unknown_text.out);
        CHECK_FALSE(member_has(line, "free"));
        CHECK(member_has(unknown_text.out, "free: none of the 2 nodes that answered holds it"));

        // The lock held before: the standalone masters still say who, the cluster cannot.
        const auto still = files.redlock(config, {"status", "-r", held});
        CHECK(still.status == 0);
        CHECK_MESSAGE(member_has(still.out, "(2 of 3 nodes agree"), still.out);
        CHECK(member_has(line_of(still.out, member), "unknown: CLUSTERDOWN"));

        // Without the standalone masters, too few can say: exit 69, not "free".
        standalone.node(0).crash();
        const auto too_few = files.redlock(config, {"status", "-r", other});
        CHECK(too_few.status == 69);
        CHECK_MESSAGE(member_has(too_few.err, "only 1 of 3 nodes answered"), too_few.err);
    }

    TEST_CASE(
        "redlock with a Sentinel-managed member: the same master twice is refused at load, "
        "and status names the master that failed") {
        redlock_test::cluster standalone{2};
        redlock_test::sentinel_member managed;
        const member_configs files;
        const json nodes = member_addresses(standalone.config().nodes);
        const json sentinels = member_addresses(managed.sentinels());
        const json one = {{"sentinels", sentinels}, {"master_name", managed.master_name()}};
        const json other_sentinel = {{"sentinels", json::array({sentinels[2]})},
                                     {"master_name", managed.master_name()}};

        const auto twice =
            files.write("twice.json", {{"nodes", json::array({nodes[0]})},
                                       {"sentinel_masters", json::array({one, other_sentinel})}});
        const auto refused = files.redlock(twice, {"acquire", "-r", "deploy"});
        CHECK(refused.status == 78);
        CHECK_MESSAGE(
            member_has(refused.err, "/sentinel_masters/1/master_name: \"" + managed.master_name() +
                                        "\" is also /sentinel_masters/0/master_name"),
            refused.err);
        CHECK(member_has(refused.err, "the same Sentinel-managed master listed twice"));

        const auto as_node =
            files.write("as-node.json", {{"nodes", json::array({nodes[0], sentinels[0]})},
                                         {"sentinel_masters", json::array({one})}});
        const auto node_refused = files.redlock(as_node, {"check"});
        CHECK(node_refused.status == 78);
        CHECK_MESSAGE(member_has(node_refused.err, "/sentinel_masters/0/sentinels/0: " +
                                                       managed.sentinels()[0].to_string() +
                                                       " is also /nodes/1"),
                      node_refused.err);

        // Listed once, the member locks; then its master (and the replica that could take
        // over) go down: status names the master the Sentinels still give.
        const auto config = files.write(
            "members.json", {{"nodes", nodes}, {"sentinel_masters", json::array({one})}});
        const auto ran = files.redlock(config, {"run", "-r", "nightly", "--", "true"});
        INFO("run stderr: " << ran.err);
        CHECK(ran.status == 0);
        const std::size_t master = managed.master_index();
        const std::string master_address = managed.server(master).address().to_string();
        managed.server(1 - master).crash();
        managed.server(master).crash();
        const auto down = files.redlock(config, {"--json", "status", "-r", "nightly"});
        CHECK(down.status == 0);
        const json entry =
            entry_of(one_object(down), "sentinel master \"" + managed.master_name() + "\"");
        CHECK(entry.at("state") == "unreachable");
        CHECK_MESSAGE(member_has(entry.at("detail"), master_address), entry.dump());
    }
}
