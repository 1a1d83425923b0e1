// A semaphore never has more than K holders: checked on the pure decision code
// (acquire_decision with permits, permit_tally) by enumerating grant patterns,
// with no sockets and no clock.
//
// A grant pattern says, for every node and every client, which permit that
// node granted that client (or none). A node grants each permit to at most one
// client, and a client at most one permit (its script stops at the first free
// one). Every client runs the decision on its own column of the pattern: how
// many hold at once is the number of clients whose decision says granted.
//
// 1. Every column (each node: refused, failed, or permit 0..K-1) is played into
//    the decision in every arrival order (on 5 nodes: every rotation and the
//    reverse), by a waiting decision and by one that does not wait; the verdict
//    must not depend on the order or on waiting, and must be "granted permit p"
//    exactly when a majority granted p. (A waiting decision hears the nodes out
//    after a loss: its late yeses for other permits once added up to a win.)
// 2. Every joint pattern is enumerated outright for 3 nodes (K = 1, 2, 3; up to
//    K + 2 clients) and for 5 nodes with K = 1, 2 (up to K + 2 clients):
//    at most K holders, never two on one permit.
// 3. For 5 nodes and K = 3 there are 136^5 joint patterns; there a search over
//    sets of granted columns finds the most clients that can be granted at
//    once. A client whose decision is "not granted" only takes permits away
//    from the others, so the largest such set is the worst pattern. The same
//    search is cross-checked against the outright enumeration of step 2.
#include "acquire_decision_support.hpp"
#include "sansio/acquire_decision.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace redlock_test;

constexpr int refused_answer = -1;
constexpr int failed = -2;

/// What the decision makes of one client's column, in several arrival orders
/// (every one up to 3 nodes; for 5, node order, reversed and every rotation):
/// the permit granted, or -1. Fails the test if two orders disagree.
auto decide(const std::vector<int>& column, int permits) -> int {
    const std::size_t n = column.size();
    std::vector<std::vector<std::size_t>> orders;
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    if (n <= 3) {
        do orders.push_back(order);
        while (std::next_permutation(order.begin(), order.end()));
    } else {
        for (std::size_t r = 0; r < n; ++r) {
            orders.push_back(order);
            std::rotate(order.begin(), order.begin() + 1, order.end());
        }
        orders.emplace_back(order.rbegin(), order.rend());
    }
    std::optional<int> verdict;
    for (const bool waiting : {false, true})
        for (const auto& o : orders) {
            fake_env env;
            acquire_settings s = plain_settings(n);
            s.permits = permits;
            s.waiting = waiting;
            acquire_decision d{s};
            (void)d.start(env.in());
            int granted = -1;
            for (const std::size_t node : o) {
                grant_answer a{column[node] >= 0 ? node_outcome{node_status::ok, {}}
                               : column[node] == refused_answer
                                   ? node_outcome{node_status::refused, "held"}
                                   : node_outcome{node_status::timeout, "late"}};
                a.permit = column[node];
                const acquire_actions act = d.on_grant(node, a, env.in());
                if (act.end == acquire_actions::ending::granted) {
                    granted = d.permit();
                    break;
                }
                if (d.current_phase() != acquire_decision::phase::granting) break;
            }
            if (verdict && *verdict != granted) {
                FAIL("the verdict depends on the order of the answers, or on waiting");
            }
            verdict = granted;
        }
    return *verdict;
}

/// The rule: permit p when a majority granted p.
auto rule_of(const std::vector<int>& column, int permits) -> int {
    for (int p = 0; p < permits; ++p) {
        if (static_cast<std::size_t>(std::count(column.begin(), column.end(), p)) * 2 >
            column.size())
            return p;
    }
    return -1;
}

/// Every column over `nodes` nodes with answers refused, failed, 0..K-1, and
/// the decision's verdict on it (refused and failed both grant nothing).
struct column_table {
    int nodes;
    int permits;
    std::vector<std::vector<int>> columns;
    std::vector<int> verdict;
};

auto build_table(int nodes, int permits) -> column_table {
    column_table t{nodes, permits, {}, {}};
    const int values = permits + 2;
    int total = 1;
    for (int i = 0; i < nodes; ++i) total *= values;
    for (int code = 0; code < total; ++code) {
        std::vector<int> column;
        for (int i = 0, c = code; i < nodes; ++i, c /= values) column.push_back(c % values - 2);
        const int v = decide(column, permits);
        CHECK(v == rule_of(column, permits));
        t.columns.push_back(column);
        t.verdict.push_back(v);
    }
    return t;
}

/// Each table is built (and checked) once: 5 nodes and K = 3 is 3,125
/// columns in 120 orders each.
auto make_table(int nodes, int permits) -> const column_table& {
    static std::deque<column_table> tables;  // references stay valid as it grows
    for (const auto& t : tables) {
        if (t.nodes == nodes && t.permits == permits) return t;
    }
    tables.push_back(build_table(nodes, permits));
    return tables.back();
}

/// Every way one node can answer `clients` clients: a permit each or none,
/// no permit twice.
auto node_patterns(int clients, int permits) -> std::vector<std::vector<int>> {
    std::vector<std::vector<int>> out;
    std::vector<int> current(static_cast<std::size_t>(clients), refused_answer);
    std::function<void(int, unsigned)> fill = [&](int c, unsigned used) {
        if (c == clients) {
            out.push_back(current);
            return;
        }
        current[static_cast<std::size_t>(c)] = refused_answer;
        fill(c + 1, used);
        for (int p = 0; p < permits; ++p) {
            if ((used & (1U << p)) != 0) continue;
            current[static_cast<std::size_t>(c)] = p;
            fill(c + 1, used | (1U << p));
        }
    };
    fill(0, 0);
    return out;
}

struct joint_result {
    int most_holders = 0;
    bool permit_shared = false;  // two holders on one permit
    std::uint64_t patterns = 0;
};

/// Step 2: every joint pattern, outright.
auto enumerate_all(const column_table& t, int clients) -> joint_result {
    const auto per_node = node_patterns(clients, t.permits);
    // What node n's pattern adds to client c's column index: the index is a
    // number in base K + 2, one digit per node.
    const auto base = static_cast<std::size_t>(t.permits + 2);
    std::vector<std::vector<std::size_t>> digit(static_cast<std::size_t>(t.nodes));
    std::size_t weight = 1;
    for (auto& d : digit) {
        for (const auto& pattern : per_node) {
            for (const int answer : pattern)
                d.push_back(static_cast<std::size_t>(answer + 2) * weight);
        }
        weight *= base;
    }
    const auto stride = static_cast<std::size_t>(clients);
    joint_result r;
    std::vector<std::size_t> choice(static_cast<std::size_t>(t.nodes), 0);
    while (true) {
        ++r.patterns;
        int holders = 0;
        unsigned held = 0;
        for (std::size_t c = 0; c < stride; ++c) {
            std::size_t index = 0;
            for (std::size_t n = 0; n < choice.size(); ++n)
                index += digit[n][choice[n] * stride + c];
            const int v = t.verdict[index];
            if (v < 0) continue;
            ++holders;
            if ((held & (1U << v)) != 0) r.permit_shared = true;
            held |= 1U << v;
        }
        r.most_holders = std::max(r.most_holders, holders);
        std::size_t n = 0;
        while (n < choice.size() && ++choice[n] == per_node.size()) choice[n++] = 0;
        if (n == choice.size()) break;
    }
    return r;
}

/// Step 3: the most granted columns that fit together (no node gives one
/// permit twice), at most `clients` of them.
auto most_granted_together(const column_table& t, int clients) -> joint_result {
    std::vector<std::size_t> granted;
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
        const auto& col = t.columns[i];
        if (t.verdict[i] >= 0 &&
            std::none_of(col.begin(), col.end(), [](int a) { return a == failed; }))
            granted.push_back(i);
    }
    joint_result r;
    std::vector<unsigned> used(static_cast<std::size_t>(t.nodes), 0);  // permits given, per node
    std::function<void(std::size_t, int, unsigned)> grow = [&](std::size_t from, int depth,
                                                               unsigned held) {
        ++r.patterns;
        r.most_holders = std::max(r.most_holders, depth);
        if (depth == clients) return;
        for (std::size_t g = from; g < granted.size(); ++g) {
            const auto& col = t.columns[granted[g]];
            bool fits = true;
            for (int n = 0; n < t.nodes && fits; ++n) {
                const int p = col[static_cast<std::size_t>(n)];
                fits = p < 0 || (used[static_cast<std::size_t>(n)] & (1U << p)) == 0;
            }
            if (!fits) continue;
            const unsigned v = 1U << t.verdict[granted[g]];
            if ((held & v) != 0) r.permit_shared = true;
            for (int n = 0; n < t.nodes; ++n) {
                const int p = col[static_cast<std::size_t>(n)];
                if (p >= 0) used[static_cast<std::size_t>(n)] |= 1U << p;
            }
            // Interchangeable clients: sets, not sequences (the next column
            // may repeat this one: two clients can be answered alike).
            grow(g, depth + 1, held | v);
            for (int n = 0; n < t.nodes; ++n) {
                const int p = col[static_cast<std::size_t>(n)];
                if (p >= 0) used[static_cast<std::size_t>(n)] &= ~(1U << p);
            }
        }
    };
    grow(0, 0, 0);
    return r;
}

}  // namespace

TEST_CASE(
    "permit_tally: a permit is won only by a majority for that permit, votes for others never add "
    "up") {
    redlock::detail::permit_tally t{5, 3};
    t.answer(0);
    t.answer(1);
    t.answer(2);
    t.answer(0);
    CHECK_FALSE(t.won());
    CHECK_FALSE(t.lost());  // permit 0 has 2, one node still to answer
    t.answer(redlock::detail::permit_tally::none);
    CHECK_FALSE(t.won());
    CHECK(t.lost());  // five yeses, no majority for any one permit
}

TEST_CASE(
    "semaphore decision: the verdict is order-free and follows the majority rule (every column, "
    "every order)") {
    for (const int nodes : {1, 3, 5}) {
        for (const int permits : {1, 2, 3}) {
            CAPTURE(nodes);
            CAPTURE(permits);
            const column_table& t = make_table(nodes, permits);
            CHECK(t.columns.size() > 0);
        }
    }
}

TEST_CASE(
    "semaphore: every grant pattern on 3 and 5 nodes, K = 1..3, up to K + 2 clients: at most K "
    "hold") {
    for (const int nodes : {3, 5}) {
        for (const int permits : {1, 2, 3}) {
            const column_table& t = make_table(nodes, permits);
            for (int clients = 1; clients <= permits + 2; ++clients) {
                CAPTURE(nodes);
                CAPTURE(permits);
                CAPTURE(clients);
                const joint_result searched = most_granted_together(t, clients);
                CHECK(searched.most_holders <= permits);
                CHECK(searched.most_holders == std::min(clients, permits));  // K is reachable
                CHECK_FALSE(searched.permit_shared);
                if (nodes == 5 && permits == 3) continue;  // 136^5 patterns: the search covers it
                const joint_result all = enumerate_all(t, clients);
                CHECK(all.most_holders <= permits);
                CHECK_FALSE(all.permit_shared);
                CHECK(all.most_holders == searched.most_holders);  // the search is exact here
            }
        }
    }
}

TEST_CASE("semaphore: a won attempt releases the other permits it may hold, and only those") {
    fake_env env;
    acquire_settings s = plain_settings(5);
    s.permits = 3;
    acquire_decision d{s};
    (void)d.start(env.in());
    auto grant = [](int permit) {
        grant_answer a{node_outcome{node_status::ok, {}}};
        a.permit = permit;
        return a;
    };
    (void)d.on_grant(0, grant(1), env.in());
    (void)d.on_grant(1, grant(2), env.in());  // this node gave us another permit
    (void)d.on_grant(2, grant_answer{node_outcome{node_status::refused, "held"}}, env.in());
    (void)d.on_grant(3, grant(1), env.in());
    const acquire_actions a = d.on_grant(4, grant(1), env.in());
    REQUIRE(a.end == acquire_actions::ending::granted);
    CHECK(d.permit() == 1);
    CHECK(a.send_stray_releases);
    using form = acquire_decision::release_form;
    CHECK(d.stray_form_of(0) == form::none);
    CHECK(d.stray_form_of(1) == form::by_sha);
    CHECK(d.stray_form_of(2) == form::none);
    CHECK(d.stray_form_of(3) == form::none);
    CHECK(d.stray_form_of(4) == form::none);

    // Won before every node answered: the silent node may yet grant us a permit.
    acquire_decision early{s};
    (void)early.start(env.in());
    (void)early.on_grant(0, grant(0), env.in());
    (void)early.on_grant(1, grant(0), env.in());
    const acquire_actions b = early.on_grant(2, grant(0), env.in());
    REQUIRE(b.end == acquire_actions::ending::granted);
    CHECK(b.send_stray_releases);
    CHECK(early.stray_form_of(3) == form::by_eval);
    CHECK(early.stray_form_of(0) == form::none);
}

TEST_CASE(
    "semaphore: a node that knows another permit count ends the acquisition with invalid_argument, "
    "unretried") {
    fake_env env;
    acquire_settings s = plain_settings(3);
    s.permits = 2;
    s.max_attempts = 5;
    acquire_decision d{s};
    (void)d.start(env.in());
    grant_answer conflict{node_outcome{node_status::error, "knows it with 3 permits"}};
    conflict.permits_conflict = true;
    (void)d.on_grant(0, conflict, env.in());
    (void)d.on_grant(1, conflict, env.in());
    const acquire_actions a = d.on_grant(2, conflict, env.in());
    CHECK_FALSE(a.retry_after);
    CHECK(d.failure_reason() == redlock::errc::invalid_argument);
    CHECK(d.attempt() == 1);
}
