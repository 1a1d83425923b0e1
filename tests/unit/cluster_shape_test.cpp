// The cluster-shape warnings without a client: an even node count, and nodes
// that report one server's run_id. Every assignment of run_ids to up to four
// nodes, identified in every order, then all again.
#include "sansio/cluster_shape.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

using redlock::detail::even_node_count_warning;
using redlock::detail::shared_server_check;

TEST_CASE("an even node count is warned about, an odd one is not") {
    for (std::size_t n = 1; n <= 8; ++n) {
        CAPTURE(n);
        CHECK(even_node_count_warning(n).empty() == (n % 2 == 1));
    }
    CHECK(even_node_count_warning(4) ==
          "4 nodes is an even number: a majority needs 3, so one more node would add fault "
          "tolerance at no cost");
}

TEST_CASE("nodes sharing a server are reported once per pair, in any order of handshakes") {
    const std::vector<std::string> ids = {"", "a", "b"};  // "": no run_id reported
    for (std::size_t n = 1; n <= 4; ++n) {
        std::size_t assignments = 1;
        for (std::size_t i = 0; i < n; ++i) assignments *= ids.size();
        for (std::size_t code = 0; code < assignments; ++code) {
            std::vector<std::string> run_id(n);
            for (std::size_t i = 0, c = code; i < n; ++i, c /= ids.size()) run_id[i] = ids[c % 3];
            std::set<std::pair<std::size_t, std::size_t>> expected;
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = i + 1; j < n; ++j)
                    if (!run_id[i].empty() && run_id[i] == run_id[j]) expected.insert({i, j});
            std::vector<std::size_t> order(n);
            std::iota(order.begin(), order.end(), 0);
            do {
                shared_server_check check{n};
                std::multiset<std::pair<std::size_t, std::size_t>> reported;
                for (int round = 0; round < 2; ++round) {  // the second: reconnects, nothing new
                    for (const std::size_t node : order) {
                        for (const auto& pair : check.identified(node, run_id[node])) {
                            CHECK(pair.first < pair.second);
                            CHECK((pair.first == node || pair.second == node));
                            reported.insert(pair);
                        }
                    }
                }
                CAPTURE(code);
                CHECK(std::set(reported.begin(), reported.end()) == expected);
                CHECK(reported.size() == expected.size());  // none twice
            } while (std::next_permutation(order.begin(), order.end()));
        }
    }
}

TEST_CASE("a node that moves to another server's run_id is reported with that server's nodes") {
    shared_server_check check{3};
    CHECK(check.identified(0, "a").empty());
    CHECK(check.identified(1, "b").empty());
    CHECK(check.identified(2, "c").empty());
    const auto moved = check.identified(2, "a");  // restarted behind another name's address
    REQUIRE(moved.size() == 1);
    CHECK(moved[0] == std::pair<std::size_t, std::size_t>{0, 2});
    CHECK(check.identified(5, "a").empty());  // an index past the nodes is ignored
}
