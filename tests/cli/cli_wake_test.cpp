// A `redlock run --wait-ms` process opens the connections that carry release
// notifications together with its others, and starts once they are answered
// (issue 28, item 4): its first attempt, refused, can then sleep until the
// holder's keys expire or its release wakes it, instead of looking again after
// 2 x request_timeout in case a release went unheard. Counted on the nodes
// (INFO commandstats), which see every attempt.
#include "cli/cli_process.hpp"
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <string>

using namespace std::chrono_literals;

namespace {

class wake_cli_cluster : public redlock_test::cli_fixture {
public:
    // request_timeout_ms 250: a re-check would come 500 ms after the refusal,
    // well before the holder's 800 ms TTL ends.
    wake_cli_cluster()
        : cli_fixture{"redlock-cli-wake-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 2000}} {}
};

/// EVAL and EVALSHA calls the clients made, on every node: each attempt of a
/// waiting acquisition is one per node, and so is a release.
auto script_calls(const redlock_test::cluster& nodes) -> long long {
    long long total = 0;
    for (const auto& server : nodes) {
        const std::string text = server.command({"INFO", "commandstats"}).value_or("");
        for (const std::string name : {"cmdstat_eval:", "cmdstat_evalsha:"}) {
            const std::size_t at = text.find(name);
            if (at == std::string::npos) continue;
            const std::size_t calls = text.find("calls=", at) + 6;
            total += std::stoll(text.substr(calls, text.find(',', calls) - calls));
        }
    }
    return total;
}

}  // namespace

TEST_SUITE("cli wake-ups") {
    TEST_CASE_FIXTURE(wake_cli_cluster,
                      "run --wait-ms makes one refused attempt and one when the holder's keys "
                      "expire, with no re-check between") {
        auto owner = make_client();
        redlock::lock_options short_ttl;
        short_ttl.ttl = 800ms;
        auto held = owner.acquire("nightly", short_ttl);  // never released: its TTL ends it
        REQUIRE(held);
        const long long before = script_calls(*this);

        const auto ran =
            redlock({"--json", "run", "--resource", "nightly", "--wait-ms", "5000", "--", "true"});

        REQUIRE(ran.status == 0);
        // Two attempts and the release, on each of the 5 nodes; the release may still be
        // reaching the last ones as the process exits. Before, the first attempt was sent
        // before the subscriptions were answered, and a third (the re-check) came between.
        const long long expected = before + 3 * 5;
        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return script_calls(*this) >= expected; }));
        CHECK(script_calls(*this) == expected);
    }
}
