// Hostile and broken servers next to healthy ones (design.md §6). Each case puts real
// redis-server masters and misbehaving nodes in one cluster: small fake servers
// (support/fake_server.hpp) that answer garbage, errors, half a reply or a trickle, and real
// servers whose keys hold the wrong type. Whatever the hostile nodes do, a client must keep
// locking while a majority is healthy, name each hostile node and its cause, fail cleanly
// when the hostile nodes are the majority, never hang past its deadlines, and never crash
// (the ASan stage of scripts/test.sh also checks that nothing leaks).

#include "support/cluster.hpp"
#include "support/fake_server.hpp"
#include "support/log_capture.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::elapsed_since;
using redlock_test::fake_answer;
using redlock_test::fake_command;
using redlock_test::fake_server;
using redlock_test::is_command;
using redlock_test::log_capture;
namespace resp = redlock_test::resp;

namespace {

/// The clients' request timeout: 50 ms, as in the README, times the tests' slowdown factor
/// (support/slowdown.hpp), as in every fixture_config(): under sanitizers a healthy round
/// trip through a busy loop can take that long by itself.
auto request_timeout() -> std::chrono::milliseconds {
    return redlock_test::scaled(50ms);
}

/// Every blocking call in this file must come back within this, whatever the hostile nodes
/// do: the client's deadlines are 50 ms per request and 200 ms per connect (both scaled
/// alike), and a failed acquisition makes three attempts 50–100 ms apart.
auto call_bound() -> std::chrono::milliseconds {
    return redlock_test::scaled(2000ms);
}

/// A cluster's config(), whose request timeout is request_timeout().
auto settings_of(const cluster& nodes) -> redlock::client_config {
    auto settings = nodes.config();
    settings.request_timeout = request_timeout();
    return settings;
}

/// What `call` returned, and how long it took.
template <class T>
struct timed_outcome {
    T value;
    std::chrono::milliseconds took;
};

/// Runs `call` and says how long it took. (A struct, not a pair to unpack with a structured
/// binding: clang 14 cannot capture a structured binding in a lambda, as doctest's macros and
/// the tests' wait_until predicates do.)
template <class F>
auto timed(F&& call) {
    const auto start = std::chrono::steady_clock::now();
    auto outcome = call();
    return timed_outcome<decltype(outcome)>{std::move(outcome), elapsed_since(start)};
}

auto mentions(std::string_view text, std::string_view part) -> bool {
    return text.find(part) != std::string_view::npos;
}

/// Every text an error puts in front of people: its message and each node's detail.
auto error_texts(const redlock::error& e) -> std::string {
    std::string all = e.message;
    for (const auto& n : e.nodes) all += "\n  " + n.node + ": " + n.detail;
    return all;
}

template <class T>
auto why(const redlock::result<T>& outcome) -> std::string {
    return outcome ? std::string{"(succeeded)"} : error_texts(outcome.error());
}

auto report_of(const std::vector<redlock::node_report>& reports, const std::string& node)
    -> std::optional<redlock::node_report> {
    for (const auto& r : reports) {
        if (r.node == node) return r;
    }
    return std::nullopt;
}

// ---- the hostile nodes ----------------------------------------------------------------------

const std::string not_resp{"\x00\x17garbage\xff\xfe\r\n", 13};

auto answer(std::string bytes) -> fake_answer {
    return fake_answer{.bytes = std::move(bytes)};
}

auto is_script_command(const fake_command& c) -> bool {
    return is_command(c, "EVAL") || is_command(c, "EVALSHA");
}

/// A kind of hostile node, and what the client must say about it.
struct hostile_kind {
    std::function<fake_server::behaviour()> behaviour;
    /// The status its entry in a release report has (one of them, for nodes whose
    /// connection state at that moment decides between two).
    std::vector<redlock::node_status> statuses;
    /// Its detail mentions one of these.
    std::vector<std::string> details;
    /// A warning about it that the client must have logged; empty: none is required.
    std::string warning;
    /// True once the client has met the node: the handshake's first round arrived (INFO is
    /// its last command; a second round, if any, still goes before every lock command), or,
    /// for a node that breaks the handshake, `warning` was logged about it.
    bool handshake_breaks = false;
};

auto garbage() -> hostile_kind {
    return {.behaviour =
                [] {
                    return fake_server::behaviour{
                        .on_command = [](const fake_command&) { return answer(not_resp); },
                        .on_accept = answer(not_resp),
                        .byte_interval = 1000ms};
                },
            .statuses = {redlock::node_status::unreachable},
            .details = {"protocol error"},
            .warning = "unreachable: protocol error",
            .handshake_breaks = true};
}

auto errors_to_everything() -> hostile_kind {
    return {.behaviour =
                [] {
                    return fake_server::behaviour{
                        .on_command =
                            [](const fake_command&) {
                                return answer(resp::error("ERR this server refuses everything"));
                            },
                        .on_accept = std::nullopt,
                        .byte_interval = 1000ms};
                },
            .statuses = {redlock::node_status::error},
            .details = {"ERR this server refuses everything"},
            .warning = "SCRIPT EXISTS failed: ERR this server refuses everything",
            .handshake_breaks = false};
}

/// Answers the handshake plausibly and every lock command with `error`.
auto refuses_writes(std::string error) -> hostile_kind {
    std::string detail = error.substr(0, error.find(' ', error.find(' ') + 1));
    return {.behaviour =
                [error] {
                    return fake_server::behaviour{
                        .on_command = fake_server::after_handshake(
                            [error](const fake_command&) { return answer(resp::error(error)); }),
                        .on_accept = std::nullopt,
                        .byte_interval = 1000ms};
                },
            .statuses = {redlock::node_status::error},
            .details = {detail},
            .warning = {},
            .handshake_breaks = false};
}

/// A replica: reads and scripts work, writes are refused.
auto read_only() -> hostile_kind {
    return refuses_writes("READONLY You can't write against a read only replica.");
}

auto out_of_memory() -> hostile_kind {
    return refuses_writes("OOM command not allowed when used memory > 'maxmemory'.");
}

/// SET works; every script, by name or by source, answers NOSCRIPT, forever.
auto noscript_forever() -> hostile_kind {
    return {.behaviour =
                [] {
                    return fake_server::behaviour{
                        .on_command = fake_server::after_handshake([](const fake_command& c) {
                            if (is_command(c, "SET")) return answer(resp::status("OK"));
                            if (is_script_command(c)) {
                                return answer(
                                    resp::error("NOSCRIPT No matching script. Please use EVAL."));
                            }
                            return answer(resp::error("ERR unexpected command"));
                        }),
                        .on_accept = std::nullopt,
                        .byte_interval = 1000ms};
                },
            .statuses = {redlock::node_status::error},
            .details = {"NOSCRIPT"},
            .warning = {},
            .handshake_breaks = false};
}

/// A server built or configured without Lua: SET works, EVAL, EVALSHA and SCRIPT are
/// unknown commands.
auto scripting_disabled() -> hostile_kind {
    return {.behaviour =
                [] {
                    return fake_server::behaviour{
                        .on_command =
                            [](const fake_command& c) {
                                if (is_script_command(c) || is_command(c, "SCRIPT")) {
                                    return answer(resp::error("ERR unknown command '" + c.front() +
                                                              "', with args beginning with: "));
                                }
                                if (auto known = fake_server::handshake_answer(c)) return *known;
                                if (is_command(c, "SET")) return answer(resp::status("OK"));
                                return answer(resp::error("ERR unexpected command"));
                            },
                        .on_accept = std::nullopt,
                        .byte_interval = 1000ms};
                },
            .statuses = {redlock::node_status::error},
            .details = {"unknown command"},
            .warning = "SCRIPT EXISTS failed: ERR unknown command 'SCRIPT'",
            .handshake_breaks = false};
}

/// Answers the handshake, then starts each answer to a lock command and closes the
/// connection in the middle of it.
auto closes_mid_reply() -> hostile_kind {
    return {.behaviour =
                [] {
                    return fake_server::behaviour{
                        .on_command = fake_server::after_handshake([](const fake_command&) {
                            return fake_answer{.bytes = "*2\r\n:1\r\n$40\r\n0123",
                                               .filler = 0,
                                               .trickle = false,
                                               .close = true};
                        }),
                        .on_accept = std::nullopt,
                        .byte_interval = 1000ms};
                },
            .statuses = {redlock::node_status::unreachable},
            .details = {"connection closed by the server"},
            .warning = "unreachable: connection closed by the server",
            .handshake_breaks = false};
}

/// Answers the handshake at once, then trickles every answer a byte a second.
auto trickles_replies() -> hostile_kind {
    return {.behaviour =
                [] {
                    return fake_server::behaviour{
                        .on_command = fake_server::after_handshake([](const fake_command& c) {
                            return fake_answer{.bytes = is_command(c, "SET") ? resp::status("OK")
                                                                             : resp::integer(1),
                                               .filler = 0,
                                               .trickle = true,
                                               .close = false};
                        }),
                        .on_accept = std::nullopt,
                        .byte_interval = 1000ms};
                },
            .statuses = {redlock::node_status::timeout},
            .details = {"no reply within"},
            .warning = {},
            .handshake_breaks = false};
}

/// Trickles everything, the handshake included: the connection never becomes usable.
auto trickles_everything() -> hostile_kind {
    return {.behaviour =
                [] {
                    return fake_server::behaviour{
                        .on_command =
                            [](const fake_command& c) {
                                auto known = fake_server::handshake_answer(c);
                                return fake_answer{
                                    .bytes = known ? known->bytes : resp::status("OK"),
                                    .filler = 0,
                                    .trickle = true,
                                    .close = false};
                            },
                        .on_accept = std::nullopt,
                        .byte_interval = 1000ms};
                },
            // Queued behind the handshake, a request times out; after the handshake's own
            // deadline the connection is dropped, and requests fail at once until it is back.
            .statuses = {redlock::node_status::timeout, redlock::node_status::unreachable},
            .details = {"no reply within", "handshake"},
            .warning = "no answer to the handshake within the connect timeout",
            .handshake_breaks = true};
}

/// Answers each lock command with the header of a 1 GB bulk string, then 1 MiB of it, then
/// nothing: a reply that never ends.
auto oversized_bulk() -> hostile_kind {
    return {.behaviour =
                [] {
                    return fake_server::behaviour{
                        .on_command = fake_server::after_handshake([](const fake_command&) {
                            return fake_answer{.bytes = "$1000000000\r\n",
                                               .filler = std::size_t{1} << 20,
                                               .trickle = false,
                                               .close = false};
                        }),
                        .on_accept = std::nullopt,
                        .byte_interval = 1000ms};
                },
            // Each answer is 1 MiB more of a reply that never ends: the request times out,
            // or, once more than 16 MiB are buffered, the connection is cut off.
            .statuses = {redlock::node_status::timeout, redlock::node_status::unreachable},
            .details = {"no reply within", "larger than 16 MiB"},
            .warning = {},
            .handshake_breaks = false};
}

// ---- the cluster ----------------------------------------------------------------------------

/// Real masters first, then hostile fakes, and a client over all of them that logs into
/// `logs`.
struct mixed_cluster {
    mixed_cluster(int healthy_count, int hostile_count, const hostile_kind& what)
        : healthy{healthy_count}, kind{what} {
        for (int i = 0; i < hostile_count; ++i)
            hostile.push_back(std::make_unique<fake_server>(kind.behaviour()));
        settings = settings_of(healthy);
        for (const auto& f : hostile) settings.nodes.push_back(f->address());
        settings.logger = logs.logger();
        locks.emplace(healthy.make_client(settings));
    }

    /// Waits until the client has met every hostile node (see hostile_kind).
    [[nodiscard]] auto met_every_hostile_node() const -> bool {
        return redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            return std::all_of(hostile.begin(), hostile.end(), [&](const auto& f) {
                const std::string name = f->address().to_string();
                if (kind.handshake_breaks) return logs.contains("node " + name + ": ");
                return f->received("INFO") >= 1;
            });
        });
    }

    /// Checks the report of each hostile node: status and detail as the kind says.
    void check_hostile_reports(const std::vector<redlock::node_report>& reports,
                               const std::string& context) const {
        for (const auto& f : hostile) {
            const std::string name = f->address().to_string();
            const auto r = report_of(reports, name);
            REQUIRE_MESSAGE(r, context << ": no report names " << name);
            // A release is decided without waiting for a hung or slow node (issue 12, item 6).
            if (context == "release report" && r->status == redlock::node_status::pending) continue;
            CHECK_MESSAGE(std::ranges::find(kind.statuses, r->status) != kind.statuses.end(),
                          context << ": " << name << " is "
                                  << std::string{redlock::to_string(r->status)} << ": "
                                  << r->detail);
            CHECK_MESSAGE(std::ranges::any_of(
                              kind.details, [&](const auto& d) { return mentions(r->detail, d); }),
                          context << ": " << name << ": " << r->detail);
        }
    }

    cluster healthy;
    std::vector<std::unique_ptr<fake_server>> hostile;
    hostile_kind kind;
    log_capture logs;
    redlock::client_config settings;
    std::optional<redlock::client> locks;
};

/// A minority of hostile nodes: lock, extend, release, a fenced lock, status and check all
/// work, each within the bound, and the hostile nodes are named with their cause.
void expect_minority_tolerated(const hostile_kind& kind, int healthy_count = 3,
                               int hostile_count = 2) {
    mixed_cluster nodes{healthy_count, hostile_count, kind};
    REQUIRE_MESSAGE(nodes.met_every_hostile_node(), nodes.logs.dump());
    auto& locks = *nodes.locks;
    const auto key = nodes.healthy.key_of("orders:42");

    auto acquire_call = timed([&] { return locks.acquire("orders:42"); });
    auto& held = acquire_call.value;

    REQUIRE_MESSAGE(held, why(held));
    CHECK(acquire_call.took < call_bound());
    CHECK(held->valid());
    CHECK(redlock_test::wait_until(redlock_test::scaled(1s), [&] {
        return nodes.healthy.count_holding(key, held->value()) == healthy_count;
    }));

    auto extend_call = timed([&] { return locks.extend(*held, 2000ms); });
    auto& extended = extend_call.value;
    CHECK_MESSAGE(extended, why(extended));
    CHECK(extend_call.took < call_bound());

    auto release_call = timed([&] { return locks.release(*held); });
    auto& report = release_call.value;
    REQUIRE_MESSAGE(report, why(report));
    CHECK(release_call.took < call_bound());
    // A hostile node, or a slow healthy one, may still be pending when the release is decided.
    CHECK(report->deleted <= static_cast<std::size_t>(healthy_count));
    CHECK(report->deleted + report->pending >= static_cast<std::size_t>(healthy_count));
    CHECK(report->majority());
    nodes.check_hostile_reports(report->nodes, "release report");
    CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                   [&] { return nodes.healthy.count_holding(key) == 0; }));

    // The scripted path: one script per node for round 1, another for the fencing round.
    redlock::lock_options fenced;
    fenced.fencing = true;
    auto fenced_acquire_call = timed([&] { return locks.acquire("orders:43", fenced); });
    auto& fenced_held = fenced_acquire_call.value;
    REQUIRE_MESSAGE(fenced_held, why(fenced_held));
    CHECK(fenced_acquire_call.took < call_bound());
    CHECK(fenced_held->fence().has_value());
    auto fenced_release_call = timed([&] { return locks.release(*fenced_held); });
    auto& fenced_report = fenced_release_call.value;
    REQUIRE_MESSAGE(fenced_report, why(fenced_report));
    CHECK(fenced_release_call.took < call_bound());
    CHECK(fenced_report->majority());

    // The read-only views put whatever the hostile nodes answer into their reports. (Whether
    // the healthy nodes count as reachable is not asserted: under ASan, a hostile node that
    // streams megabytes can hold the loop past the 50 ms request timeout.)
    auto status_call = timed([&] { return locks.status("orders:42"); });
    auto& status = status_call.value;
    REQUIRE_MESSAGE(status, why(status));
    CHECK(status_call.took < call_bound());
    CHECK(status->nodes.size() == nodes.settings.nodes.size());
    auto check_call = timed([&] { return locks.check(); });
    auto& health = check_call.value;
    REQUIRE_MESSAGE(health, why(health));
    CHECK(check_call.took < call_bound());
    CHECK(health->nodes.size() == nodes.settings.nodes.size());

    if (!kind.warning.empty()) {
        CHECK_MESSAGE(redlock_test::wait_until(redlock_test::scaled(1s),
                                               [&] { return nodes.logs.contains(kind.warning); }),
                      nodes.logs.dump());
    }
    auto stop_call = timed([&] {
        nodes.locks.reset();
        return true;
    });
    CHECK(stop_call.value);
    CHECK(stop_call.took < call_bound());
}

/// A majority of hostile nodes (three of five): the acquisition fails with `expected`
/// within the bound, after its three attempts, names every hostile node with its cause, and
/// leaves no key on the healthy nodes.
void expect_majority_refused(const hostile_kind& kind, redlock::errc expected,
                             redlock::lock_options options = {}) {
    mixed_cluster nodes{2, 3, kind};
    REQUIRE_MESSAGE(nodes.met_every_hostile_node(), nodes.logs.dump());
    const auto key = nodes.healthy.key_of("orders:42");

    auto acquire_call = timed([&] { return nodes.locks->acquire("orders:42", options); });
    auto& held = acquire_call.value;

    REQUIRE_FALSE(held);
    CHECK(acquire_call.took < call_bound());
    CHECK_MESSAGE(held.error().code == expected, why(held));
    CHECK(held.error().attempts == 3);
    nodes.check_hostile_reports(held.error().nodes, "acquire error");
    for (const auto& f : nodes.hostile) {
        CHECK_MESSAGE(mentions(held.error().message, f->address().to_string()),
                      held.error().message);
    }
    CHECK(nodes.healthy.count_holding(key) == 0);
    auto stop_call = timed([&] {
        nodes.locks.reset();
        return true;
    });
    CHECK(stop_call.value);
    CHECK(stop_call.took < call_bound());
}

auto fencing() -> redlock::lock_options {
    redlock::lock_options o;
    o.fencing = true;
    return o;
}

}  // namespace

TEST_SUITE("hostile servers") {
    // ---- garbage ---------------------------------------------------------------------------

    TEST_CASE(
        "two nodes that answer garbage do not prevent a lock, and are named as protocol "
        "errors") {
        expect_minority_tolerated(garbage());
    }

    TEST_CASE("one node that answers garbage next to four healthy ones does not prevent a lock") {
        expect_minority_tolerated(garbage(), 4, 1);
    }

    TEST_CASE("three nodes that answer garbage make acquisition fail as quorum_unreachable") {
        expect_majority_refused(garbage(), redlock::errc::quorum_unreachable);
    }

    // ---- an error to every command ---------------------------------------------------------

    TEST_CASE(
        "two nodes that answer every command with an error do not prevent a lock, and "
        "their error is reported and logged") {
        expect_minority_tolerated(errors_to_everything());
    }

    TEST_CASE(
        "three nodes that answer every command with an error make acquisition fail as "
        "quorum_unreachable") {
        expect_majority_refused(errors_to_everything(), redlock::errc::quorum_unreachable);
    }

    // ---- READONLY and OOM --------------------------------------------------------------------

    TEST_CASE(
        "two read-only replicas among the nodes do not prevent a lock, and are reported as "
        "READONLY") {
        expect_minority_tolerated(read_only());
    }

    TEST_CASE(
        "three read-only replicas make acquisition fail as quorum_unreachable, naming "
        "READONLY") {
        expect_majority_refused(read_only(), redlock::errc::quorum_unreachable);
    }

    TEST_CASE("two nodes out of memory do not prevent a lock, and are reported as OOM") {
        expect_minority_tolerated(out_of_memory());
    }

    TEST_CASE("three nodes out of memory make acquisition fail as quorum_unreachable, naming OOM") {
        expect_majority_refused(out_of_memory(), redlock::errc::quorum_unreachable);
    }

    // ---- scripts that never run ------------------------------------------------------------

    TEST_CASE(
        "two nodes that answer NOSCRIPT forever do not prevent a lock, and the EVAL "
        "fallback is tried once, not in a loop") {
        expect_minority_tolerated(noscript_forever());
    }

    TEST_CASE(
        "three nodes that answer NOSCRIPT forever make a fenced acquisition fail as "
        "quorum_unreachable") {
        expect_majority_refused(noscript_forever(), redlock::errc::quorum_unreachable, fencing());
    }

    TEST_CASE(
        "with three NOSCRIPT nodes a plain lock is granted by SET, and its release says "
        "that no majority deleted it") {
        mixed_cluster nodes{2, 3, noscript_forever()};
        REQUIRE_MESSAGE(nodes.met_every_hostile_node(), nodes.logs.dump());
        auto held = nodes.locks->acquire("orders:42");
        REQUIRE_MESSAGE(held, why(held));

        auto release_call = timed([&] { return nodes.locks->release(*held); });
        auto& report = release_call.value;

        REQUIRE_MESSAGE(report, why(report));
        CHECK(release_call.took < call_bound());
        CHECK(report->deleted <= 2);  // the others may be pending when decided
        CHECK(report->deleted + report->pending >= 2);
        CHECK_FALSE(report->majority());
        nodes.check_hostile_reports(report->nodes, "release report");
        // One EVALSHA, then one EVAL on NOSCRIPT, per hostile node; then nothing more.
        for (const auto& f : nodes.hostile) {
            CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                           [&] { return f->received("EVAL") == 1; }));
            CHECK(f->received("EVALSHA") == 1);
        }
        CHECK(redlock_test::holds_for(200ms,
                                      [&] { return nodes.hostile[0]->received("EVAL") == 1; }));
    }

    TEST_CASE(
        "two nodes without scripting do not prevent a lock, and are reported as unknown "
        "command") {
        expect_minority_tolerated(scripting_disabled());
    }

    TEST_CASE(
        "three nodes without scripting make a fenced acquisition fail as "
        "quorum_unreachable") {
        expect_majority_refused(scripting_disabled(), redlock::errc::quorum_unreachable, fencing());
    }

    // ---- broken connections ----------------------------------------------------------------

    TEST_CASE(
        "two nodes that close the connection in the middle of a reply do not prevent a "
        "lock") {
        expect_minority_tolerated(closes_mid_reply());
    }

    TEST_CASE(
        "three nodes that close the connection in the middle of a reply make acquisition "
        "fail as quorum_unreachable") {
        expect_majority_refused(closes_mid_reply(), redlock::errc::quorum_unreachable);
    }

    TEST_CASE(
        "two nodes that trickle their replies a byte a second do not delay a lock beyond "
        "the request timeout") {
        expect_minority_tolerated(trickles_replies());
    }

    TEST_CASE(
        "three nodes that trickle their replies make acquisition fail as "
        "quorum_unreachable within the bound") {
        expect_majority_refused(trickles_replies(), redlock::errc::quorum_unreachable);
    }

    TEST_CASE("two nodes that trickle even the handshake do not prevent a lock") {
        expect_minority_tolerated(trickles_everything());
    }

    TEST_CASE(
        "three nodes that trickle even the handshake make acquisition fail as "
        "quorum_unreachable") {
        expect_majority_refused(trickles_everything(), redlock::errc::quorum_unreachable);
    }

    TEST_CASE("two nodes that send a bulk reply of a gigabyte do not prevent a lock") {
        expect_minority_tolerated(oversized_bulk());
    }

    TEST_CASE(
        "three nodes that send a bulk reply of a gigabyte make acquisition fail as "
        "quorum_unreachable") {
        expect_majority_refused(oversized_bulk(), redlock::errc::quorum_unreachable);
    }

    TEST_CASE("a node whose reply never ends is disconnected, then connected again and used") {
        mixed_cluster nodes{3, 1, oversized_bulk()};
        REQUIRE_MESSAGE(nodes.met_every_hostile_node(), nodes.logs.dump());
        auto held = nodes.locks->acquire("orders:42");
        REQUIRE_MESSAGE(held, why(held));
        const auto& fake = *nodes.hostile[0];

        // The request timed out at once; the connection still owes its reply, and is
        // recycled once it has owed it for max(2 s, 20 × request_timeout).
        const auto stale_after = std::max<std::chrono::milliseconds>(2s, 20 * request_timeout());
        bool recycled = redlock_test::wait_until(stale_after + redlock_test::scaled(3s), [&] {
            return nodes.logs.contains("no reply for");
        });
        bool reconnected = redlock_test::wait_until(redlock_test::scaled(2s),
                                                    [&] { return fake.connections() >= 2; });

        CHECK_MESSAGE(recycled, nodes.logs.dump());
        CHECK(reconnected);
        CHECK(nodes.locks->release(*held));
    }

    // hiredis 0.14's reader buffers an unfinished bulk reply without limit; the connection
    // cuts off any reply larger than 16 MiB (node_connection::feed). Before that cap, only the
    // stale-reply timer (2 s) ended this, and a node on loopback made the client buffer about
    // 1 GB (peak RSS 6 MB -> 983 MB).
    TEST_CASE(
        "a node that streams an endless bulk reply is cut off before the client has "
        "buffered 32 MiB of it") {
        constexpr std::size_t streamed = std::size_t{96} << 20;
        constexpr std::size_t bound = std::size_t{32} << 20;
        cluster healthy{3};
        fake_server endless{fake_server::behaviour{
            .on_command = fake_server::after_handshake([](const fake_command&) {
                return fake_answer{.bytes = "$1000000000\r\n",
                                   .filler = streamed,
                                   .trickle = false,
                                   .close = false};
            }),
            .on_accept = std::nullopt,
            .byte_interval = 1000ms}};
        auto settings = settings_of(healthy);
        settings.nodes.push_back(endless.address());
        auto locks = healthy.make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return endless.received("INFO") >= 1; }));
        auto held = locks.acquire("orders:42");
        REQUIRE_MESSAGE(held, why(held));

        // Either the client reads the whole stream, or it hangs up on it first.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s), [&] {
            return endless.bytes_sent() >= streamed || endless.closed_by_client() >= 1;
        }));

        CHECK_MESSAGE(endless.bytes_sent() < bound,
                      "the client read " << endless.bytes_sent() << " bytes of one reply");
    }

    // ---- WRONGTYPE: real servers whose key holds a hash ------------------------------------

    TEST_CASE(
        "two nodes where the lock key holds a hash do not prevent a lock, and its release "
        "reports WRONGTYPE there") {
        cluster nodes{5};
        const auto key = nodes.key_of("orders:42");
        for (int i : {3, 4}) REQUIRE(nodes[i].command({"HSET", key, "field", "value"}) == "1");
        log_capture logs;
        auto settings = settings_of(nodes);
        settings.logger = logs.logger();
        auto locks = nodes.make_client(settings);

        auto acquire_call = timed([&] { return locks.acquire("orders:42"); });
        auto& held = acquire_call.value;
        REQUIRE_MESSAGE(held, why(held));
        CHECK(acquire_call.took < call_bound());
        auto extend_call = timed([&] { return locks.extend(*held, 2000ms); });
        auto& extended = extend_call.value;
        CHECK_MESSAGE(extended, why(extended));
        CHECK(extend_call.took < call_bound());
        auto release_call = timed([&] { return locks.release(*held); });
        auto& report = release_call.value;

        REQUIRE_MESSAGE(report, why(report));
        CHECK(release_call.took < call_bound());
        CHECK(report->deleted <= 3);  // the others may be pending when decided
        CHECK(report->deleted + report->pending >= 3);
        for (int i : {3, 4}) {
            const auto r = report_of(report->nodes, nodes[i].address().to_string());
            REQUIRE(r);
            // Decided without it under load: pending, and its error counted late.
            if (r->status == redlock::node_status::pending) continue;
            CHECK(r->status == redlock::node_status::error);
            CHECK_MESSAGE(mentions(r->detail, "WRONGTYPE"), r->detail);
            CHECK(nodes[i].command({"TYPE", key}) == "hash");  // never overwritten
        }
    }

    TEST_CASE("three nodes where the lock key holds a hash make acquisition fail as contended") {
        cluster nodes{5};
        const auto key = nodes.key_of("orders:42");
        for (int i : {0, 2, 4}) REQUIRE(nodes[i].command({"HSET", key, "field", "value"}) == "1");
        auto locks = nodes.make_client(settings_of(nodes));

        auto acquire_call = timed([&] { return locks.acquire("orders:42"); });
        auto& held = acquire_call.value;

        REQUIRE_FALSE(held);
        CHECK(acquire_call.took < call_bound());
        CHECK_MESSAGE(held.error().code == redlock::errc::contended, why(held));
        for (int i : {0, 2, 4}) {
            const auto r = report_of(held.error().nodes, nodes[i].address().to_string());
            REQUIRE(r);
            CHECK(r->status == redlock::node_status::refused);
            CHECK(nodes[i].command({"TYPE", key}) == "hash");
        }
        CHECK(nodes[1].exists(key) == false);
        CHECK(nodes[3].exists(key) == false);
    }

    TEST_CASE(
        "three nodes where the fencing counter holds a hash make a fenced acquisition fail "
        "as quorum_unreachable, naming WRONGTYPE") {
        cluster nodes{5};
        const std::string counter = nodes.fence_key_of("orders:42");
        for (int i : {0, 1, 2})
            REQUIRE(nodes[i].command({"HSET", counter, "field", "value"}) == "1");
        auto locks = nodes.make_client(settings_of(nodes));

        auto acquire_call = timed([&] { return locks.acquire("orders:42", fencing()); });
        auto& held = acquire_call.value;

        REQUIRE_FALSE(held);
        CHECK(acquire_call.took < call_bound());
        CHECK_MESSAGE(held.error().code == redlock::errc::quorum_unreachable, why(held));
        for (int i : {0, 1, 2}) {
            const auto r = report_of(held.error().nodes, nodes[i].address().to_string());
            REQUIRE(r);
            CHECK(r->status == redlock::node_status::error);
            CHECK_MESSAGE(mentions(r->detail, "WRONGTYPE"), r->detail);
        }
        CHECK(nodes.count_holding(nodes.key_of("orders:42")) == 0);
    }
}
