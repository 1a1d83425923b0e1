// Who leads an election, from the nodes' answers (sansio/election_tally.hpp):
// every combination of eight kinds of answer on 1, 3 and 5 nodes, against a
// count made per kind, and the cases that matter spelled out.

#include "sansio/election_tally.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace redlock::detail;
using redlock::election_view;
using std::chrono::milliseconds;

namespace {

const std::string lock_a = "0123456789abcdef0123456789abcdef|host-a:1 (app)";
const std::string lock_b = "fedcba9876543210fedcba9876543210|host-b:2 (app)";
const std::string lock_z = "00000000000000000000000000000000";

/// What one node may answer.
enum class answer {
    unreachable,
    empty,          // no lock, no leader key
    a_newest,       // A holds, and its second proclamation arrived
    a_older,        // A holds, its second proclamation not yet there
    a_stale_key,    // A holds, the leader key still names Z (A's proposal not there yet)
    b_holds,        // B holds and proclaimed
    readers,        // a reader holds the name (not an election's lock)
    a_key_no_lock,  // A's leader key, its lock key expired here
    count
};

auto leader_key(node_election& n, std::uint64_t term, const std::string& lock, std::uint64_t seq,
                std::string value) {
    n.leader_term = term;
    n.leader_lock = lock;
    n.leader_seq = seq;
    n.leader_value = std::move(value);
}

auto node_of(answer a, std::size_t index) -> node_election {
    node_election n;
    if (a == answer::unreachable) return n;
    n.answered = true;
    n.counter = 6;
    const milliseconds ttl{1000 + 100 * static_cast<long long>(index)};
    switch (a) {
        case answer::a_newest:
            n.lock_value = lock_a, n.ttl = ttl, n.counter = 7;
            leader_key(n, 7, lock_a, 2, "a2");
            break;
        case answer::a_older:
            n.lock_value = lock_a, n.ttl = ttl, n.counter = 7;
            leader_key(n, 7, lock_a, 1, "a1");
            break;
        case answer::a_stale_key:
            n.lock_value = lock_a, n.ttl = ttl, n.counter = 7;
            leader_key(n, 6, lock_z, 4, "z");
            break;
        case answer::b_holds:
            n.lock_value = lock_b, n.ttl = ttl, n.counter = 8;
            leader_key(n, 8, lock_b, 0, "b");
            break;
        case answer::readers:
            n.lock_value = "~readers", n.ttl = ttl;
            leader_key(n, 6, "~readers", 0, "r");
            break;
        case answer::a_key_no_lock:
            n.counter = 7;
            leader_key(n, 7, lock_a, 2, "a2");
            break;
        default:
            break;
    }
    return n;
}

/// The expected view, counted per kind of answer.
void check_combination(const std::vector<answer>& answers) {
    const std::size_t n = answers.size();
    const std::size_t quorum = n / 2 + 1;
    std::vector<node_election> nodes;
    std::size_t answered = 0;
    std::size_t newest = 0;
    std::size_t older = 0;
    std::size_t b = 0;
    std::uint64_t highest = 0;
    std::vector<long long> a_ttls;
    std::vector<long long> b_ttls;
    for (std::size_t i = 0; i < n; ++i) {
        nodes.push_back(node_of(answers[i], i));
        const answer a = answers[i];
        if (a == answer::unreachable) continue;
        ++answered;
        const std::uint64_t counter = a == answer::b_holds ? 8
                                      : (a == answer::a_newest || a == answer::a_older ||
                                         a == answer::a_stale_key || a == answer::a_key_no_lock)
                                          ? 7
                                          : 6;
        highest = std::max(highest, counter);
        const long long ttl = 1000 + 100 * static_cast<long long>(i);
        if (a == answer::a_newest) ++newest, a_ttls.push_back(ttl);
        if (a == answer::a_older) ++older, a_ttls.push_back(ttl);
        if (a == answer::b_holds) ++b, b_ttls.push_back(ttl);
    }
    const election_view view = tally_election("e", nodes, quorum);
    CAPTURE(n);
    CAPTURE(newest);
    CAPTURE(older);
    CAPTURE(b);
    REQUIRE(view.name == "e");
    REQUIRE(view.quorum == quorum);
    REQUIRE(view.answered == answered);
    REQUIRE(view.highest_term == highest);
    std::ranges::sort(a_ttls, std::greater<>{});
    std::ranges::sort(b_ttls, std::greater<>{});
    if (newest + older >= quorum) {
        REQUIRE(view.leader);
        CHECK(view.leader->term == 7);
        CHECK(view.leader->holder == "host-a:1 (app)");
        // The second proclamation only once a majority of A's nodes have it.
        CHECK(view.leader->value == (newest >= quorum ? "a2" : "a1"));
        CHECK(view.leader->proclaimed == (newest >= quorum ? 2U : 1U));
        CHECK(view.leader->validity == milliseconds{a_ttls[quorum - 1]});
        CHECK(view.agreeing == newest + older);
    } else if (b >= quorum) {
        REQUIRE(view.leader);
        CHECK(view.leader->term == 8);
        CHECK(view.leader->value == "b");
        CHECK(view.leader->holder == "host-b:2 (app)");
        CHECK(view.leader->validity == milliseconds{b_ttls[quorum - 1]});
        CHECK(view.agreeing == b);
    } else {
        CHECK_FALSE(view.leader);
        CHECK(view.agreeing == 0);
    }
}

void every_combination(std::size_t n) {
    const auto kinds = static_cast<std::size_t>(answer::count);
    std::size_t total = 1;
    for (std::size_t i = 0; i < n; ++i) total *= kinds;
    std::vector<answer> answers(n);
    for (std::size_t code = 0; code < total; ++code) {
        std::size_t c = code;
        for (std::size_t i = 0; i < n; ++i) {
            answers[i] = static_cast<answer>(c % kinds);
            c /= kinds;
        }
        check_combination(answers);
    }
}

}  // namespace

TEST_SUITE("election tally") {
    TEST_CASE("every combination of answers on one node") {
        every_combination(1);
    }
    TEST_CASE("every combination of answers on three nodes") {
        every_combination(3);
    }
    TEST_CASE("every combination of answers on five nodes") {
        every_combination(5);
    }

    TEST_CASE("a leader key left by a crashed leader counts for nobody") {
        std::vector<node_election> nodes(3, node_of(answer::a_stale_key, 0));
        const election_view view = tally_election("e", nodes, 2);
        CHECK_FALSE(view.leader);
        CHECK(view.highest_term == 7);  // the new term is known, its leader not yet proclaimed
    }

    TEST_CASE("no node answered: no leader, nothing answered") {
        std::vector<node_election> nodes(5);
        const election_view view = tally_election("e", nodes, 3);
        CHECK_FALSE(view.leader);
        CHECK(view.answered == 0);
        CHECK(view.highest_term == 0);
    }

    TEST_CASE("a value without holder text has an empty holder") {
        std::vector<node_election> nodes(1, node_of(answer::a_newest, 0));
        nodes[0].lock_value = lock_z;
        nodes[0].leader_lock = lock_z;
        const election_view view = tally_election("e", nodes, 1);
        REQUIRE(view.leader);
        CHECK(view.leader->holder.empty());
    }
}
