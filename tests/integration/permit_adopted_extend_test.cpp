// Issue 36, item 3, on real servers: an adopted permit (client::adopt, the CLI's
// `extend --permits K --value V`) does not know which permit its value holds, so
// its extend names every permit key and each node extends whichever one holds the
// value there. Those yeses must count only per permit, as an acquisition's do:
// before the fix, a yes for permit 1 on one node and yeses for permit 0 on two
// others made a "majority", and the extend confirmed a lease whose permit 0 was
// held on two nodes only, while another holder held permit 0 on a majority.
// Pure counterpart: tests/unit/permit_extend_tally_test.cpp.
#include "support/cluster.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

constexpr int k_permits = 2;
// Values: 32 hex digits, '|', the holder text (README, "Who holds a lock").
const std::string ours = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a|adopted by value";
const std::string theirs = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b|holder of permit 0";
const std::string third = "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c|holder of permit 1";

auto permit_key(const cluster& nodes, int p) -> std::string {
    return nodes.key_of("pool") + "|permit|" + std::to_string(p);
}

/// `node` holds `zero` at permit 0 and `one` at permit 1 ("" for free) for 60 s.
void plant(const cluster& nodes, std::size_t node, const std::string& zero,
           const std::string& one) {
    for (int p = 0; p < k_permits; ++p) {
        const std::string& value = p == 0 ? zero : one;
        if (!value.empty())
            REQUIRE(nodes[node].command({"SET", permit_key(nodes, p), value, "PX", "60000"}));
    }
    REQUIRE(nodes[node].command(
        {"SET", nodes.key_of("pool") + "|permits", std::to_string(k_permits), "PX", "60000"}));
}

}  // namespace

TEST_SUITE("permit adopted extend") {
    TEST_CASE_FIXTURE(cluster, "an adopted permit's extend counts its yeses per permit") {
        // Our value won permit 0 on A, B, C; on D it had been given permit 1, whose
        // stray release was lost. C then lost our permit 0 (its key expired while C
        // was cut off, or C restarted), and another holder won permit 0 on C, D, E.
        //   A: ours, -        B: ours, -        C: theirs, -
        //   D: theirs, ours   E: theirs, third
        plant(*this, 0, ours, "");
        plant(*this, 1, ours, "");
        plant(*this, 2, theirs, "");
        plant(*this, 3, theirs, ours);
        plant(*this, 4, theirs, third);
        auto locks = make_client();
        const auto adopted = locks.adopt("pool", ours, redlock::lock_kind::permit, k_permits);

        // Permit 0 is theirs on a majority: ours can no longer be confirmed. Before
        // the fix, A's and B's permit 0 and D's permit 1 were three yeses.
        auto extended = locks.extend(adopted, 5000ms);
        CHECK_FALSE(extended);
        if (!extended) CHECK(extended.error().code == redlock::errc::not_held);
        CHECK(count_holding(permit_key(*this, 0), theirs) == 3);
    }

    TEST_CASE_FIXTURE(cluster, "an adopted permit held on a majority is extended there") {
        // The same stray on D, our permit 0 still on A, B, C: extended.
        plant(*this, 0, ours, "");
        plant(*this, 1, ours, "");
        plant(*this, 2, ours, "");
        plant(*this, 3, theirs, ours);
        plant(*this, 4, theirs, third);
        auto locks = make_client();
        const auto adopted = locks.adopt("pool", ours, redlock::lock_kind::permit, k_permits);

        auto extended = locks.extend(adopted, 5000ms);
        REQUIRE(extended);
        CHECK(*extended > 4000ms);
        for (std::size_t node = 0; node < 3; ++node)
            CHECK((*this)[node].pttl(permit_key(*this, 0)) > 40'000);  // never shortened
    }
}
