// Fresh `redlock` processes on three Redis Cluster members whose seeds a failover turned into
// replicas (issue 38, items 1, 2 and 7): every grant lands on every member, `status` right
// after sees all three agree, and `leader --watch` sees a leader come and go on cluster
// members. Real processes, real servers (tests/support/cluster_member).
#include "cli/cli_process.hpp"
#include "support/cluster_member.hpp"
#include "support/member_deployment.hpp"
#include "support/sentinel_member.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using nlohmann::json;
using redlock_test::cli_process;
using redlock_test::cli_result;
using redlock_test::cluster_member;
using redlock_test::one_object;
using redlock_test::sentinel_member;

namespace {

namespace fs = std::filesystem;

/// Three one-shard clusters with a replica each; every member lists both of its nodes as
/// seeds, and wait_replicas 1, as the README advises for members that fail over.
class failing_over {
public:
    failing_over()
        : dir{fs::temp_directory_path() / ("redlock-cli-failover-" + std::to_string(getpid()))},
          config{dir / "members.json"} {
        fs::remove_all(dir);
        fs::create_directories(dir);
        auto clusters = json::array();
        for (int i = 0; i < 3; ++i) {
            members.push_back(std::make_unique<cluster_member>(redlock_test::cluster_member_options{
                .shards = 1, .replicas = 1, .node_timeout = 1000ms, .server = {}}));
            auto seeds = json::array();
            for (const auto& s : members.back()->seeds())
                seeds.push_back({{"host", s.host}, {"port", s.port}});
            clusters.push_back({{"seeds", seeds}, {"wait_replicas", 1}});
        }
        json settings{{"connect_timeout_ms", 1000},
                      {"request_timeout_ms", 500},
                      {"lock", {{"ttl_ms", 5000}}},
                      {"clusters", clusters}};
        std::ofstream{config} << settings.dump(2);
    }
    failing_over(const failing_over&) = delete;
    auto operator=(const failing_over&) -> failing_over& = delete;
    ~failing_over() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }

    auto redlock(std::vector<std::string> args) -> cli_result {
        args.insert(args.begin(), {"--config", config.string()});
        return cli_process{args, dir}.wait(60s);
    }
    auto start(std::vector<std::string> args) -> std::unique_ptr<cli_process> {
        args.insert(args.begin(), {"--config", config.string()});
        return std::make_unique<cli_process>(args, dir);
    }
    /// In how many members `resource`'s key holds `value` now.
    auto holding(const std::string& resource, const std::string& value) const -> int {
        int n = 0;
        for (const auto& m : members)
            n += m->get(redlock_test::lock_key_of(resource)) == value ? 1 : 0;
        return n;
    }

    fs::path dir;
    fs::path config;
    std::vector<std::unique_ptr<cluster_member>> members;
};

/// Three Sentinel-managed masters with a replica each, and wait_replicas 1.
class sentinels_failing_over {
public:
    sentinels_failing_over()
        : dir{fs::temp_directory_path() /
              ("redlock-cli-sentinel-failover-" + std::to_string(getpid()))},
          config{dir / "members.json"} {
        fs::remove_all(dir);
        fs::create_directories(dir);
        auto masters = json::array();
        for (int i = 0; i < 3; ++i) {
            members.push_back(
                std::make_unique<sentinel_member>(redlock_test::sentinel_member_options{
                    .master_name = "m" + std::to_string(i), .server = {}}));
            auto sentinels = json::array();
            for (const auto& s : members.back()->sentinels())
                sentinels.push_back({{"host", s.host}, {"port", s.port}});
            masters.push_back({{"sentinels", sentinels},
                               {"master_name", members.back()->master_name()},
                               {"wait_replicas", 1}});
        }
        json settings{{"connect_timeout_ms", 1000},
                      {"request_timeout_ms", 500},
                      {"lock", {{"ttl_ms", 5000}}},
                      {"sentinel_masters", masters}};
        std::ofstream{config} << settings.dump(2);
    }
    sentinels_failing_over(const sentinels_failing_over&) = delete;
    auto operator=(const sentinels_failing_over&) -> sentinels_failing_over& = delete;
    ~sentinels_failing_over() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
    auto redlock(std::vector<std::string> args) -> cli_result {
        args.insert(args.begin(), {"--config", config.string()});
        return cli_process{args, dir}.wait(60s);
    }
    auto holding(const std::string& resource, const std::string& value) const -> int {
        int n = 0;
        for (const auto& m : members) {
            const auto& master = m->server(m->master_index());
            n += master.get(redlock_test::lock_key_of(resource)) == value ? 1 : 0;
        }
        return n;
    }

    fs::path dir;
    fs::path config;
    std::vector<std::unique_ptr<sentinel_member>> members;
};

/// The node serving cluster `c`'s only shard now.
auto master_of(const cluster_member& c) -> std::size_t {
    return c.master_of_slot(0);
}

/// Every line a `leader --watch --json` wrote so far (its stdout file in `dir`).
auto watch_lines(const fs::path& dir) -> std::vector<json> {
    std::vector<json> lines;
    for (const auto& entry : fs::directory_iterator{dir}) {
        if (entry.path().extension() != ".out") continue;
        std::istringstream text{redlock_test::slurp(entry.path())};
        for (std::string line; std::getline(text, line);) {
            auto parsed = json::parse(line, nullptr, false);
            if (!parsed.is_discarded() && parsed.contains("highest_term"))
                lines.push_back(std::move(parsed));
        }
    }
    return lines;
}

}  // namespace

TEST_SUITE("cli members failover") {
    TEST_CASE(
        "fresh redlock processes while seeds become replicas and masters are killed: every "
        "grant on all three members, and status right after agrees") {
        failing_over d;
        int grants = 0;
        for (int round = 0; round < 6; ++round) {
            CAPTURE(round);
            cluster_member& hit = *d.members[static_cast<std::size_t>(round) % 3];
            const std::size_t was = master_of(hit);
            if (round < 3) {
                hit.manual_failover(was);  // the seed that was a master is a replica now
            } else {
                hit.forced_failover(was);  // killed: one seed down, the other promoted
                hit.restart_node(was);     // back as a replica of its successor
            }
            REQUIRE(master_of(hit) != was);
            const std::string resource = "failover:" + std::to_string(round);
            const auto acquired = d.redlock({"acquire", "-r", resource, "--ttl-ms", "20000"});
            INFO("acquire stderr: " << acquired.err);
            REQUIRE(acquired.status == 0);
            const std::string value = acquired.out.substr(0, acquired.out.find('\n'));
            // On every member when the one-shot process has exited, not on a bare majority.
            CHECK(d.holding(resource, value) == 3);
            grants += d.holding(resource, value);
            const auto status = d.redlock({"--json", "status", "-r", resource});
            CHECK(status.status == 0);
            const json seen = one_object(status);
            CHECK(seen.at("holder") == value);
            CHECK(seen.at("agreed") == true);
            REQUIRE(seen.at("nodes").size() == 3);
            for (const auto& n : seen.at("nodes")) CHECK(n.at("holder") == value);
            // A rival is refused while it is held: no second holder across the failovers.
            CHECK(d.redlock({"acquire", "-r", resource}).status == 75);
            CHECK(d.redlock({"release", "-r", resource, "--value", value}).status == 0);
        }
        CHECK(grants == 18);
    }

    TEST_CASE(
        "fresh redlock processes while SENTINEL FAILOVER moves each master: every grant "
        "on all three members") {
        sentinels_failing_over d;
        for (int round = 0; round < 3; ++round) {
            CAPTURE(round);
            sentinel_member& hit = *d.members[static_cast<std::size_t>(round)];
            const std::size_t was = hit.master_index();
            hit.failover();
            REQUIRE(hit.master_index() != was);
            const std::string resource = "sentinel-failover:" + std::to_string(round);
            const auto acquired = d.redlock({"acquire", "-r", resource, "--ttl-ms", "20000"});
            INFO("acquire stderr: " << acquired.err);
            REQUIRE(acquired.status == 0);
            const std::string value = acquired.out.substr(0, acquired.out.find('\n'));
            CHECK(d.holding(resource, value) == 3);
            const json seen = one_object(d.redlock({"--json", "status", "-r", resource}));
            CHECK(seen.at("agreed") == true);
            CHECK(d.redlock({"acquire", "-r", resource}).status == 75);
            CHECK(d.redlock({"release", "-r", resource, "--value", value}).status == 0);
        }
    }

    TEST_CASE("leader --watch on three cluster members prints the leader, then its end") {
        failing_over d;
        d.members[0]->manual_failover(master_of(*d.members[0]));
        auto watching = d.start({"leader", "--name", "svc", "--watch", "--json"});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return !watch_lines(d.dir).empty(); }));
        CHECK(watch_lines(d.dir).front()["leader"].is_null());
        const auto led = d.redlock({"elect", "--name", "svc", "--proposal", "w", "--ttl-ms",
                                    "30000", "--", "/bin/sh", "-c", "sleep 0.3"});
        CHECK(led.status == 0);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s), [&] {
            const auto lines = watch_lines(d.dir);
            return lines.size() >= 3 && lines.back()["leader"].is_null();
        }));
        const auto lines = watch_lines(d.dir);
        CHECK(lines[1]["leader"]["value"] == "w");
        watching->signal(SIGTERM);
        CHECK(watching->wait(10s).status == 0);
    }
}
