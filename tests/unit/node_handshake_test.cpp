// node_handshake without sockets: what a connection says first, against a model node
// (node_handshake_model.hpp) that answers each command from canned replies. Every
// combination of AUTH, cached scripts, SCRIPT EXISTS, SCRIPT LOAD, INFO (Redis 7, older
// servers, partial answers), AOF and CONFIG GET is played, then again with a LOADING error
// at each reply in turn; each is checked against what the handshake must send, learn and
// say. Then named cases: the fallback for servers before Redis 7, restarts, subscribers,
// stale replies.

#include "node_handshake_model.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock::detail::all_scripts;
using redlock::detail::node_handshake;
using redlock_test::command;
using redlock_test::node_model;
using verdict = node_handshake::verdict;

namespace {

const std::string password = "hunter2-correct-horse";
const std::string first_run_id(40, 'a');
const std::string second_run_id(40, 'b');

auto config_with(bool auth) -> redlock::client_config {
    redlock::client_config config;
    if (auth) config.password = redlock::secret{password};
    config.lock.ttl = 10s;
    return config;
}

auto exists_command() -> command {
    command c{"SCRIPT", "EXISTS"};
    for (const auto* s : all_scripts()) c.push_back(s->sha);
    return c;
}

auto load_command(std::size_t i) -> command {
    return {"SCRIPT", "LOAD", std::string{all_scripts()[i]->source}};
}

/// One point of the space the exhaustive test walks.
struct combo {
    int auth = 0;    ///< 0: no password, 1: the right one, 2: a wrong one
    int cached = 0;  ///< 0: every script, 1: every other one, 2: none
    node_model::exists_mode exists = node_model::exists_mode::answer;
    bool load_fails = false;
    node_model::info_mode info = node_model::info_mode::redis7;
    bool plain_info_fails = false;
    bool aof = false;
    node_model::config_mode config = node_model::config_mode::always;
    bool server_time = true;

    [[nodiscard]] auto describe() const -> std::string {
        return "auth " + std::to_string(auth) + ", cached " + std::to_string(cached) + ", exists " +
               std::to_string(static_cast<int>(exists)) + ", load_fails " +
               std::to_string(load_fails) + ", info " + std::to_string(static_cast<int>(info)) +
               ", plain_info_fails " + std::to_string(plain_info_fails) + ", aof " +
               std::to_string(aof) + ", config " + std::to_string(static_cast<int>(config)) +
               ", server_time " + std::to_string(server_time);
    }

    [[nodiscard]] auto node(const std::string& run_id) const -> node_model {
        node_model n;
        n.password = auth == 2 ? "another" : password;
        for (std::size_t i = 0; i < all_scripts().size(); ++i)
            n.cached.push_back(cached == 0 || (cached == 1 && i % 2 == 0));
        n.exists = exists;
        n.load_fails = load_fails;
        n.info = info;
        n.plain_info_fails = plain_info_fails;
        n.run_id = run_id;
        n.aof = aof;
        n.config = config;
        n.server_time = server_time;
        return n;
    }

    /// The scripts the handshake must load.
    [[nodiscard]] auto missing() const -> std::vector<std::size_t> {
        std::vector<std::size_t> out;
        if (exists == node_model::exists_mode::error) return out;
        for (std::size_t i = 0; i < all_scripts().size(); ++i) {
            const bool there = cached == 0 || (cached == 1 && i % 2 == 0);
            if (exists == node_model::exists_mode::malformed || !there) out.push_back(i);
        }
        return out;
    }
    [[nodiscard]] auto fallback() const -> bool { return info != node_model::info_mode::redis7; }
    [[nodiscard]] auto info_readable() const -> bool { return !fallback() || !plain_info_fails; }
    [[nodiscard]] auto learns_run_id() const -> bool {
        return info_readable() && info != node_model::info_mode::no_run_id;
    }
    /// The first round's INFO told the node's clock: no TIME is asked.
    [[nodiscard]] auto first_round_clock() const -> bool {
        return server_time && info != node_model::info_mode::syntax_error;
    }
    /// The clock the handshake keeps: INFO's, or TIME's (which the second round asks last).
    [[nodiscard]] auto node_time() const -> std::int64_t {
        return first_round_clock() ? 1'700'000'000'654'321 : 1'700'000'000'123'456;
    }
    [[nodiscard]] auto persists() const -> bool {
        return info_readable() && aof && config == node_model::config_mode::always;
    }

    [[nodiscard]] auto first_round() const -> std::vector<command> {
        std::vector<command> r;
        if (auth != 0) r.push_back({"AUTH", password});
        r.push_back(exists_command());
        r.push_back({"INFO", "server", "persistence", "replication", "cluster"});
        return r;
    }
    [[nodiscard]] auto second_round() const -> std::vector<command> {
        std::vector<command> r;
        for (const std::size_t i : missing()) r.push_back(load_command(i));
        if (fallback()) r.push_back({"INFO"});
        if (!first_round_clock()) r.push_back({"TIME"});
        if (fallback() || aof) r.push_back({"CONFIG", "GET", "appendfsync"});
        return r;
    }
    [[nodiscard]] auto warnings() const -> std::vector<std::string> {
        std::vector<std::string> w;
        if (exists == node_model::exists_mode::error)
            w.push_back("SCRIPT EXISTS failed: ERR unknown command 'SCRIPT'");
        if (load_fails) {
            for (std::size_t i = 0; i < missing().size(); ++i)
                w.push_back("SCRIPT LOAD failed: ERR Error compiling script");
        }
        if (fallback() && plain_info_fails) {
            w.push_back("cannot read its run_id (ERR unknown command 'INFO')");
        } else if (info == node_model::info_mode::no_run_id) {
            w.push_back("cannot read its run_id (no run_id in INFO)");
        }
        return w;
    }
};

/// Every combination, each with `fn`.
template <typename Fn>
void for_each_combo(Fn fn) {
    using em = node_model::exists_mode;
    using im = node_model::info_mode;
    using cm = node_model::config_mode;
    for (int auth : {0, 1, 2})
        for (int cached : {0, 1, 2})
            for (em exists : {em::answer, em::error, em::malformed})
                for (bool load_fails : {false, true})
                    for (im info : {im::redis7, im::syntax_error, im::first_only, im::no_run_id})
                        for (bool plain_info_fails : {false, true})
                            for (bool aof : {false, true})
                                for (cm config : {cm::always, cm::everysec, cm::error})
                                    for (bool server_time : {true, false})
                                        fn(combo{auth, cached, exists, load_fails, info,
                                                 plain_info_fails, aof, config, server_time});
}

/// `got` holds each of `want` in turn, at the start of a line.
auto warnings_match(const std::vector<std::string>& got, const std::vector<std::string>& want)
    -> bool {
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (!got[i].starts_with(want[i])) return false;
    }
    return true;
}

}  // namespace

TEST_SUITE("node_handshake") {
    TEST_CASE("every combination sends, learns and warns as it must") {
        std::size_t played = 0;
        for_each_combo([&](const combo& c) {
            INFO(c.describe());
            const auto config = config_with(c.auth != 0);
            node_handshake hs;
            node_model node = c.node(first_run_id);
            const auto run = redlock_test::play(hs, config, node);
            ++played;
            REQUIRE_MESSAGE(run.problems.empty(), run.problems);
            REQUIRE(!run.rounds.empty());
            CHECK(run.rounds[0] == c.first_round());
            if (c.auth == 2) {
                CHECK(run.result == verdict::failed);
                CHECK(run.cause.starts_with("AUTH failed: WRONGPASS"));
                CHECK(run.cause.find(password) == std::string::npos);
                CHECK(run.rounds.size() == 1);
                return;
            }
            REQUIRE(run.result == verdict::done);
            const auto second = c.second_round();
            // The usual node (scripts cached, Redis 7, no AOF): the first round is all.
            CHECK(run.rounds.size() == (second.empty() ? 1U : 2U));
            if (!second.empty()) CHECK(run.rounds.at(1) == second);
            CHECK_MESSAGE(warnings_match(run.warnings, c.warnings()), run.warnings.size()
                                                                          << " warnings");

            CHECK(hs.node_time() == c.node_time());

            const auto first = hs.settle_identity(config);
            CHECK_FALSE(first.restarted);
            CHECK(hs.run_id() == (c.learns_run_id() ? first_run_id : std::string{}));

            // The node comes back with another run_id: a restart, if it can be told.
            node_model restarted = c.node(second_run_id);
            const auto again = redlock_test::play(hs, config, restarted);
            REQUIRE(again.result == verdict::done);
            const auto r = hs.settle_identity(config);
            CHECK(r.restarted == c.learns_run_id());
            if (r.restarted) CHECK(r.quarantine == (c.persists() ? 0ms : 10s));
        });
        CHECK(played == 5184);
    }

    TEST_CASE("a LOADING error at any reply fails the handshake there, and no more is sent") {
        for_each_combo([&](const combo& c) {
            const auto config = config_with(c.auth != 0);
            node_handshake reference;
            node_model plain = c.node(first_run_id);
            const std::size_t replies = redlock_test::play(reference, config, plain).replies;
            for (std::size_t at = 0; at < replies; ++at) {
                INFO(c.describe() << ", LOADING at reply " << at);
                node_handshake hs;
                node_model node = c.node(first_run_id);
                node.loading_at = at;
                const auto run = redlock_test::play(hs, config, node);
                REQUIRE_MESSAGE(run.problems.empty(), run.problems);
                CHECK(run.result == verdict::failed);
                // A wrong password is found at the first reply, before any LOADING after it.
                const bool auth_first = c.auth == 2 && at > 0;
                if (auth_first) {
                    CHECK(run.cause.starts_with("AUTH failed: "));
                } else {
                    CHECK(run.cause == "still loading its data set");
                }
                // The first round is written whole; a LOADING in it asks for no second.
                if (at < c.first_round().size()) CHECK(run.rounds.size() == 1);
            }
        });
    }

    TEST_CASE("INFO: Redis 7 answers two sections, older servers get plain INFO next") {
        const auto config = config_with(false);
        SUBCASE("Redis 7: one INFO, no CONFIG GET without AOF, nothing loaded") {
            node_handshake hs;
            node_model node;
            const auto run = redlock_test::play(hs, config, node);
            CHECK(run.result == verdict::done);
            CHECK(run.rounds.size() == 1);
            CHECK(run.rounds[0].size() == 2);  // SCRIPT EXISTS, INFO (with the clock)
            CHECK(run.warnings.empty());
        }
        SUBCASE("Redis 6 and before: a syntax error, then INFO and CONFIG GET") {
            node_handshake hs;
            node_model node;
            node.info = node_model::info_mode::syntax_error;
            node.aof = true;
            const auto run = redlock_test::play(hs, config, node);
            CHECK(run.result == verdict::done);
            REQUIRE(run.rounds.size() == 2);
            CHECK(run.rounds[1] ==
                  std::vector<command>{{"INFO"}, {"TIME"}, {"CONFIG", "GET", "appendfsync"}});
            CHECK(run.warnings.empty());
            hs.settle_identity(config);
            CHECK(hs.run_id() == node.run_id);
        }
        SUBCASE("a server that answers the first section only: plain INFO too") {
            node_handshake hs;
            node_model node;
            node.info = node_model::info_mode::first_only;
            const auto run = redlock_test::play(hs, config, node);
            REQUIRE(run.rounds.size() == 2);
            CHECK(run.rounds[1].front() == command{"INFO"});
            hs.settle_identity(config);
            CHECK(hs.run_id() == node.run_id);
        }
        SUBCASE("INFO that says loading:1 fails the handshake") {
            node_handshake hs;
            node_model node;
            node.info_says_loading = true;
            const auto run = redlock_test::play(hs, config, node);
            CHECK(run.result == verdict::failed);
            CHECK(run.cause == "still loading its data set");
        }
        SUBCASE("the run_id warning is said once per connection, not at each reconnect") {
            node_handshake hs;
            node_model node;
            node.info = node_model::info_mode::syntax_error;
            node.plain_info_fails = true;
            CHECK(redlock_test::play(hs, config, node).warnings.size() == 1);
            node_model again = node;
            CHECK(redlock_test::play(hs, config, again).warnings.empty());
        }
    }

    TEST_CASE("AOF with appendfsync always: a restarted node counts at once") {
        const auto config = config_with(false);
        node_handshake hs;
        node_model node;
        node.aof = true;
        const auto run = redlock_test::play(hs, config, node);
        REQUIRE(run.rounds.size() == 2);
        CHECK(run.rounds[1] == std::vector<command>{{"CONFIG", "GET", "appendfsync"}});
        CHECK_FALSE(hs.settle_identity(config).restarted);
        node.run_id = second_run_id;
        REQUIRE(redlock_test::play(hs, config, node).result == verdict::done);
        const auto r = hs.settle_identity(config);
        CHECK(r.restarted);
        CHECK(r.quarantine == 0ms);
        CHECK(r.warning.find("persists every write") != std::string::npos);
    }

    TEST_CASE("a subscriber sends AUTH and SUBSCRIBE only") {
        const auto config = config_with(true);
        node_handshake hs;
        node_model node;
        node.password = password;
        auto run = redlock_test::play(hs, config, node, "redlock:wake");
        CHECK(run.result == verdict::done);
        CHECK(run.rounds == std::vector<std::vector<command>>{
                                {{"AUTH", password}, {"SUBSCRIBE", "redlock:wake"}}});
        CHECK(hs.subscribed());
        node.subscribe_fails = true;
        run = redlock_test::play(hs, config, node, "redlock:wake");
        CHECK(run.result == verdict::done);
        CHECK_FALSE(hs.subscribed());
        REQUIRE(run.warnings.size() == 1);
        CHECK(run.warnings[0].starts_with("SUBSCRIBE failed: NOPERM"));
        node.loading_at = node.answered + 1;
        run = redlock_test::play(hs, config, node, "redlock:wake");
        CHECK(run.result == verdict::failed);
    }

    TEST_CASE("an AUTH error that quotes the password is not repeated") {
        const auto config = config_with(true);
        node_handshake hs;
        std::string out;
        std::deque<redlock::detail::request_fifo::request> requests;
        hs.begin(config, {}, out, requests, nullptr, 0);
        const auto echoed =
            redlock_test::parse_resp("-ERR unknown command 'AUTH " + password + "'\r\n");
        const auto s = hs.on_reply(
            requests.at(0).tag, {redlock::detail::request_status::reply, echoed.at(0).get(), {}});
        CHECK(s.result == verdict::failed);
        CHECK(s.cause.starts_with("AUTH failed: "));
        CHECK(s.cause.find(password) == std::string::npos);
    }

    TEST_CASE("a dropped connection fails the handshake, what comes after is ignored") {
        const auto config = config_with(false);
        node_handshake hs;
        std::string out;
        std::deque<redlock::detail::request_fifo::request> requests;
        hs.begin(config, {}, out, requests, nullptr, 0);
        REQUIRE(requests.size() == 2);
        const redlock::detail::reply_event dropped{redlock::detail::request_status::unreachable,
                                                   nullptr, "connection closed by the server"};
        const auto s = hs.on_reply(requests[0].tag, dropped);
        CHECK(s.result == verdict::failed);
        CHECK(s.cause == "connection closed by the server");
        // The second reply of the abandoned handshake, and a late one: ignored.
        const auto ignored = hs.on_reply(requests[1].tag, dropped);
        CHECK(ignored.result == verdict::pending);
        CHECK(ignored.tags.empty());
        // A new handshake starts clean.
        node_model node;
        CHECK(redlock_test::play(hs, config, node).result == verdict::done);
    }

    TEST_CASE("the node's clock: INFO's server_time_usec, else TIME in a second round") {
        const auto config = config_with(false);
        node_handshake hs;
        SUBCASE("Redis 7 and later: INFO says it, and no TIME is sent") {
            node_model node;
            const auto run = redlock_test::play(hs, config, node);
            CHECK(run.result == verdict::done);
            REQUIRE(run.rounds.size() == 1);
            for (const auto& c : run.rounds[0]) CHECK(c.at(0) != "TIME");
            CHECK(hs.node_time() == 1'700'000'000'654'321);
        }
        SUBCASE(
            "INFO lacks it, or is Redis 6.2's (a time cached at its last cron): TIME, "
            "alone in the second round") {
            node_model lacking;
            lacking.server_time = false;
            node_model redis62;
            redis62.version = "6.2.14";
            for (node_model* node : {&lacking, &redis62}) {
                INFO("redis_version " << node->version);
                const auto run = redlock_test::play(hs, config, *node);
                CHECK(run.result == verdict::done);
                REQUIRE(run.rounds.size() == 2);
                CHECK(run.rounds[1] == std::vector<command>{{"TIME"}});
                CHECK(hs.node_time() == 1'700'000'000'123'456);
            }
        }
        SUBCASE("no redis_version, or not a number: TIME; a major version above 7: none") {
            for (const std::string version : {"", "seven", "10"}) {
                node_model node;
                node.version = version;
                const auto run = redlock_test::play(hs, config, node);
                CHECK(run.result == verdict::done);
                CHECK(run.rounds.size() == (version == "10" ? 1U : 2U));
            }
        }
        // A second round that asks TIME, answered this way.
        std::string out;
        std::deque<redlock::detail::request_fifo::request> requests;
        node_model node;
        node.server_time = false;
        const auto answer = [&](std::string_view time_reply) {
            hs.begin(config, {}, out, requests, nullptr, 0);
            CHECK_FALSE(hs.node_time().has_value());  // a new handshake forgets the old clock
            const auto exists = redlock_test::parse_resp(node.answer(exists_command()));
            const auto info = redlock_test::parse_resp(
                node.answer({"INFO", "server", "persistence", "replication", "cluster"}));
            const auto time = redlock_test::parse_resp(std::string{time_reply});
            using redlock::detail::request_status;
            (void)hs.on_reply(node_handshake::script_exists_tag,
                              {request_status::reply, exists[0].get(), {}});
            const auto s =
                hs.on_reply(node_handshake::info_tag, {request_status::reply, info[0].get(), {}});
            CHECK(s.tags == std::vector<std::uint32_t>{node_handshake::time_tag});
            return hs.on_reply(node_handshake::time_tag,
                               {request_status::reply, time[0].get(), {}});
        };
        SUBCASE("TIME renamed away: the handshake is done, the clock is not watched") {
            CHECK(answer("-ERR unknown command 'TIME'\r\n").result == verdict::done);
            CHECK_FALSE(hs.node_time().has_value());
        }
        SUBCASE("not TIME's shape: ignored alike") {
            CHECK(answer(":5\r\n").result == verdict::done);
            CHECK_FALSE(hs.node_time().has_value());
        }
        SUBCASE("a server_time_usec that is not a number: TIME is asked instead") {
            hs.begin(config, {}, out, requests, nullptr, 0);
            const auto exists = redlock_test::parse_resp(node.answer(exists_command()));
            const auto info = redlock_test::parse_resp(redlock_test::bulk(
                "# Server\r\nrun_id:x\r\nserver_time_usec:soon\r\n# Persistence\r\n"
                "loading:0\r\naof_enabled:0\r\n"));
            using redlock::detail::request_status;
            (void)hs.on_reply(node_handshake::script_exists_tag,
                              {request_status::reply, exists[0].get(), {}});
            const auto s =
                hs.on_reply(node_handshake::info_tag, {request_status::reply, info[0].get(), {}});
            CHECK(s.tags == std::vector<std::uint32_t>{node_handshake::time_tag});
            CHECK_FALSE(hs.node_time().has_value());
        }
    }

    TEST_CASE("a subscriber and a sentinel are not asked the time") {
        const auto config = config_with(false);
        node_handshake hs;
        std::string out;
        std::deque<redlock::detail::request_fifo::request> requests;
        hs.begin(config, "chan", out, requests, nullptr, 0);
        CHECK(out.find("TIME") == std::string::npos);
        hs.expect(node_handshake::peer::sentinel);
        out.clear();
        hs.begin(config, {}, out, requests, nullptr, 0);
        CHECK(out.find("TIME") == std::string::npos);
    }

    TEST_CASE("info_field and has_info_field read INFO's text") {
        const std::string text = "# Server\r\nrun_id:abc\r\nempty:\r\nrun:x\r\n";
        CHECK(redlock::detail::info_field(text, "run_id") == "abc");
        CHECK(redlock::detail::info_field(text, "run") == "x");
        CHECK(redlock::detail::info_field(text, "missing").empty());
        CHECK(redlock::detail::has_info_field(text, "empty"));
        CHECK_FALSE(redlock::detail::has_info_field(text, "missing"));
        CHECK_FALSE(redlock::detail::has_info_field(text, "# Server"));
    }
}

TEST_CASE(
    "a replica (but a cluster node's), or a node of the wrong mode, fails the handshake "
    "and says why") {
    using peer = node_handshake::peer;
    struct row {
        peer expected;
        const char* role;
        const char* cluster_enabled;
        const char* cause;  ///< nullptr: the handshake succeeds
    };
    const row rows[] = {
        {peer::standalone, "master", "0", nullptr},
        {peer::standalone, "master", "", nullptr},  // not told: not refused
        {peer::standalone, "slave", "0", "is a replica (role:slave, of 127.0.0.1:7001)"},
        {peer::standalone, "master", "1", "is a Redis Cluster node"},
        {peer::cluster_node, "master", "1", nullptr},
        {peer::cluster_node, "master", "0", "is not in cluster mode"},
        // A cluster replica is a source of the slot map, and redirects writes (MOVED).
        {peer::cluster_node, "slave", "1", nullptr},
        {peer::cluster_node, "slave", "0", "is not in cluster mode"},
    };
    for (const row& r : rows) {
        for (const bool auth : {false, true}) {
            CAPTURE(static_cast<int>(r.expected));
            CAPTURE(r.role);
            CAPTURE(r.cluster_enabled);
            node_model node;
            if (auth) node.password = password;
            node.role = r.role;
            node.cluster_enabled = r.cluster_enabled;
            node_handshake hs;
            hs.expect(r.expected);
            const auto run = redlock_test::play(hs, config_with(auth), node);
            CHECK(run.problems.empty());
            if (r.cause == nullptr) {
                CHECK(run.result == verdict::done);
            } else {
                CHECK(run.result == verdict::failed);
                CHECK(run.cause.find(r.cause) != std::string::npos);
            }
        }
    }
}

TEST_CASE("a sentinel is sent AUTH and PING only") {
    for (const bool auth : {false, true}) {
        node_model node;
        if (auth) node.password = password;
        node_handshake hs;
        hs.expect(node_handshake::peer::sentinel);
        const auto run = redlock_test::play(hs, config_with(auth), node);
        CHECK(run.problems.empty());
        CHECK(run.result == verdict::done);
        REQUIRE(run.rounds.size() == 1);
        const std::vector<command> expected =
            auth ? std::vector<command>{{"AUTH", password}, {"PING"}}
                 : std::vector<command>{{"PING"}};
        CHECK(run.rounds[0] == expected);
    }
}
