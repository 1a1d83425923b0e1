// node_trust, the connection's shell around clock_watch and the restart rule,
// fed by hand: no socket, no loop. What it counts, quarantines and logs.
#include "transport/node_trust.hpp"

#include "node_handshake_model.hpp"
#include "transport/node_connection.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock::detail::node_trust;
using redlock::detail::reply_event;
using redlock::detail::request_status;
using std::chrono::steady_clock;

namespace {

struct trust_rig {
    redlock::client_config config;
    std::string name = "10.0.0.3:6379";
    redlock::detail::connection_counters all;
    redlock::detail::node_counters node;
    std::vector<std::string> lines;

    trust_rig() {
        config.restart_quarantine = 7000ms;
        config.logger = [this](redlock::log_level, std::string_view line) {
            lines.emplace_back(line);
        };
    }

    /// A TIME answer saying `wall_us`, fed to `trust` as probe `tag`'s reply (read now).
    static void answer(node_trust& trust, std::uint32_t tag, std::int64_t wall_us) {
        const std::string resp = "*2\r\n$10\r\n" + std::to_string(wall_us / 1'000'000) +
                                 "\r\n$6\r\n" +
                                 std::to_string(1'000'000 + wall_us % 1'000'000).substr(1) + "\r\n";
        const auto parsed = redlock_test::parse_resp(resp);
        trust.on_reply(tag, reply_event{request_status::reply, parsed.at(0).get(), {}});
    }
};

constexpr std::int64_t wall0 = 1'700'000'000'000'000;

}  // namespace

TEST_SUITE("node_trust") {
    TEST_CASE("a handshake's TIME is the reference, a probe that keeps time changes nothing") {
        trust_rig rig;
        node_trust trust{rig.config, rig.name, rig.all, rig.node};
        const auto sent = steady_clock::now() - 10ms;  // the handshake, just before
        trust.after_handshake({}, wall0, sent, sent + 1ms);
        const auto tag = trust.probe_sent(sent + 1ms);
        // The node's clock advanced as ours did (to within the round trip).
        const auto elapsed =
            std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - sent);
        trust_rig::answer(trust, tag, wall0 + elapsed.count());
        CHECK(rig.all.clock_steps.load() == 0);
        CHECK(trust.quarantined_until() == steady_clock::time_point{});
        CHECK(rig.lines.empty());
    }

    TEST_CASE(
        "a step quarantines like a restart, is counted on the node and the client, "
        "and logged") {
        trust_rig rig;
        node_trust trust{rig.config, rig.name, rig.all, rig.node};
        const auto sent = steady_clock::now() - 10ms;  // the handshake, just before
        trust.after_handshake({}, wall0, sent, sent + 1ms);
        const auto tag = trust.probe_sent(sent + 1ms);
        // Answered at once (well under a second later) with a clock a minute ahead.
        trust_rig::answer(trust, tag, wall0 + 60'000'000);
        CHECK(rig.all.clock_steps.load() == 1);
        CHECK(rig.node.clock_steps.load() == 1);
        CHECK(trust.quarantined_until() > steady_clock::now() + 6s);
        CHECK(trust.cause().starts_with("its clock stepped 5"));  // 59.x s at least
        CHECK(trust.cause().ends_with("ms forward"));
        REQUIRE(trust.last_step().has_value());
        CHECK(trust.last_step()->quarantine == 7000ms);
        REQUIRE(rig.lines.size() == 1);
        CHECK(rig.lines[0].starts_with("redlock: node 10.0.0.3:6379: its clock stepped"));
        CHECK(rig.lines[0].find("not counted for 7000 ms") != std::string::npos);
    }

    TEST_CASE("restart_quarantine 0: a step is counted and logged, the grants still count") {
        trust_rig rig;
        rig.config.restart_quarantine = 0ms;
        node_trust trust{rig.config, rig.name, rig.all, rig.node};
        const auto sent = steady_clock::now() - 10ms;  // the handshake, just before
        trust.after_handshake({}, wall0, sent, sent + 1ms);
        trust_rig::answer(trust, trust.probe_sent(sent + 1ms), wall0 - 60'000'000);
        CHECK(rig.all.clock_steps.load() == 1);
        CHECK(trust.quarantined_until() == steady_clock::time_point{});
        REQUIRE(rig.lines.size() == 1);
        CHECK(rig.lines[0].find("backward") != std::string::npos);
        CHECK(rig.lines[0].find("still count") != std::string::npos);
    }

    TEST_CASE("a failed probe proves nothing, and the one after it is still judged") {
        trust_rig rig;
        node_trust trust{rig.config, rig.name, rig.all, rig.node};
        const auto sent = steady_clock::now() - 10ms;  // the handshake, just before
        trust.after_handshake({}, wall0, sent, sent + 1ms);
        const auto lost = trust.probe_sent(sent);
        const auto kept = trust.probe_sent(sent + 1ms);
        trust.on_reply(lost, reply_event{request_status::timeout, nullptr, "no reply"});
        CHECK(rig.all.clock_steps.load() == 0);
        trust_rig::answer(trust, kept, wall0 + 60'000'000);
        CHECK(rig.all.clock_steps.load() == 1);
    }

    TEST_CASE("a restart resets the reference: the new process's clock owes nothing to the old") {
        trust_rig rig;
        node_trust trust{rig.config, rig.name, rig.all, rig.node};
        const auto sent = steady_clock::now() - 10ms;  // the handshake, just before
        trust.after_handshake({}, wall0, sent, sent + 1ms);
        redlock::detail::node_handshake::restart r;
        r.restarted = true;
        r.quarantine = 7000ms;
        r.warning = "restarted (new run_id)";
        trust.after_handshake(r, wall0 + 3'600'000'000LL, sent + 2ms, sent + 3ms);
        CHECK(rig.all.restarts.load() == 1);
        CHECK(rig.all.clock_steps.load() == 0);
        CHECK(trust.cause() == "restarted without persisting every write");
        REQUIRE(rig.lines.size() == 1);
        CHECK(rig.lines[0] == "redlock: node 10.0.0.3:6379: restarted (new run_id)");
    }
}
