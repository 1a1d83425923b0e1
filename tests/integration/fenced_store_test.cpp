// The paused-holder scenario of the README's "Safety and its limits", played
// out against real servers: the lock alone cannot stop a holder that wakes up
// after its validity ended, but a store that checks fencing tokens can.
#include "support/cluster.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

auto fenced_store_script() -> std::string {
    std::ifstream in{REDLOCK_SOURCE_DIR "/examples/fenced_store.lua"};
    REQUIRE_MESSAGE(in.good(), "cannot read examples/fenced_store.lua");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/// One fenced write to the protected store, as a client of it would do it.
auto fenced_write(const redlock_test::redis_server& store, const std::string& script,
                  std::uint64_t token, const std::string& value) -> std::string {
    return store
        .command(
            {"EVAL", script, "2", "invoice:42", "invoice:42:fence", std::to_string(token), value})
        .value_or("(nil)");
}

}  // namespace

TEST_SUITE("fenced store") {
    TEST_CASE_FIXTURE(cluster, "a paused holder's late write is rejected by its fencing token") {
        const std::string script = fenced_store_script();
        redlock_test::redis_server store;  // the protected data store, not a lock node
        auto alice = make_client();
        auto bob = make_client();
        redlock::lock_options fenced;
        fenced.fencing = true;
        fenced.ttl = 300ms;

        // 1. Alice takes the lock and its token, then "pauses" (a GC pause, a
        //    swap storm, SIGSTOP): she does nothing until her validity is over.
        auto a = alice.acquire("invoice:42", fenced);
        REQUIRE(a);
        REQUIRE(a->fence());
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] { return !a->valid(); }));
        // 2. The keys expire on the nodes; Bob acquires and gets a higher token.
        redlock::lock_options patient = fenced;
        patient.max_wait = 2s;
        auto b = bob.acquire("invoice:42", patient);
        REQUIRE(b);
        REQUIRE(b->fence());
        CHECK(*b->fence() > *a->fence());
        // 3. Bob writes with his token: accepted.
        const std::string bob_wrote = fenced_write(store, script, *b->fence(), "paid by bob");
        // 4. Alice wakes up and writes as if she still held the lock.
        const std::string alice_wrote = fenced_write(store, script, *a->fence(), "paid by alice");

        CHECK(bob_wrote == "1");
        CHECK(alice_wrote.starts_with("-STALE fencing token"));
        CHECK(store.get("invoice:42") == "paid by bob");
        CHECK(store.get("invoice:42:fence") == std::to_string(*b->fence()));
    }

    TEST_CASE("the store accepts repeated writes with the same token and rejects garbage") {
        const std::string script = fenced_store_script();
        redlock_test::redis_server store;

        const std::string first = fenced_write(store, script, 7, "v1");
        const std::string again = fenced_write(store, script, 7, "v2");
        const std::string older = fenced_write(store, script, 6, "v0");
        const std::string garbage =
            store.command({"EVAL", script, "2", "invoice:42", "invoice:42:fence", "x", "v"})
                .value_or("(nil)");

        CHECK(first == "1");
        CHECK(again == "1");  // one holder may write several times
        CHECK(older.starts_with("-STALE"));
        CHECK(garbage.starts_with("-BADTOKEN"));
        CHECK(store.get("invoice:42") == "v2");
    }
}
