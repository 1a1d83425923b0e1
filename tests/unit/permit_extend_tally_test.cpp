// Issue 36, item 3: an adopted permit's extend (client::adopt, the CLI's
// `extend --permits K --value V`) names every permit key, since which permit the
// value holds is not known, and each node extends whichever permit holds the value
// there. A value may hold another permit on some node: a stray of its acquisition
// whose release was lost. Before the fix every node's yes counted alike, so two
// yeses for permit 0 and a stray's yes for permit 1 "confirmed" a lease whose
// permit 0 was held on two nodes of five — while another holder could hold permit 0
// on the other three. Now each node names the permit it extended ({ttl, permit})
// and extend_decision counts the yeses per permit, as an acquisition counts its
// grants (permit_tally). Played through on_reply() as extend_op drives it, every
// answer pattern on 3 and 5 nodes in several orders. No sockets, no clock.
// On real servers: tests/integration/permit_adopted_extend_test.cpp.
#include "canned_reply.hpp"
#include "extend_flow_support.hpp"
#include "sansio/extend_decision.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::detail;
using redlock::errc;
using redlock::node_status;
using redlock_test::canned_reply;
using namespace redlock_test::extend_flow;

namespace {

// A node's answer: the permit it extended (0..K-1), or one of these.
constexpr int other_value = -1;  // 0: the value holds no permit there
constexpr int timed_out = -2;    // no answer within request_timeout

/// What the permit extend script answers with every permit key named.
class permit_reply {
public:
    explicit permit_reply(int answer) {
        if (answer == timed_out) {
            plain_ = canned_reply::timeout();
        } else if (answer == other_value) {
            plain_ = canned_reply::integer(0);
        } else {
            items_[0] = {reply_kind::integer, 9'000, {}, {}};
            items_[1] = {reply_kind::integer, answer, {}, {}};
            pointers_ = {&items_[0], &items_[1]};
            array_ = {reply_kind::array, 0, {}, pointers_};
            is_array_ = true;
        }
    }
    permit_reply(const permit_reply&) = delete;
    auto operator=(const permit_reply&) -> permit_reply& = delete;

    [[nodiscard]] auto event() const -> reply_event {
        return is_array_ ? reply_event{request_status::reply, &array_, {}} : plain_.event();
    }

private:
    std::array<reply, 2> items_{};
    std::array<const reply*, 2> pointers_{};
    reply array_{};
    canned_reply plain_ = canned_reply::nil();
    bool is_array_ = false;
};

struct verdict {
    ending end = ending::none;
    errc code = errc::not_held;
};

/// An adopted permit of K `permits` extended on `answers.size()` nodes, the
/// answers arriving in `order`.
auto extend_with(const std::vector<int>& answers, int permits,
                 const std::vector<std::size_t>& order) -> verdict {
    extend_settings s = settings;
    s.permits = permits;
    extend_decision d{answers.size(), s};
    extend_lock_view lock = held_lock({});
    lock.adopted = true;  // validity unknown here
    REQUIRE(d.start(lock, t0).send_extends);
    for (const std::size_t node : order) {
        const permit_reply r{answers[node]};
        const extend_actions a = d.on_reply(node, script_form::evalsha, r.event(), lock, t0 + 5ms);
        if (a.end != ending::none) return {a.end, a.code};
    }
    return {};
}

/// Node order, reversed and every rotation.
auto orders_of(std::size_t n) -> std::vector<std::vector<std::size_t>> {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::vector<std::vector<std::size_t>> orders;
    for (std::size_t r = 0; r < n; ++r) {
        orders.push_back(order);
        std::rotate(order.begin(), order.begin() + 1, order.end());
    }
    std::reverse(order.begin(), order.end());
    orders.push_back(order);
    return orders;
}

auto text_of(const std::vector<int>& answers) -> std::string {
    std::string s;
    for (const int a : answers) {
        s += a == timed_out ? 't' : a == other_value ? 'o' : static_cast<char>('0' + a);
    }
    return s;
}

}  // namespace

TEST_SUITE("permit extend tally") {
    TEST_CASE("yeses for a stray permit do not confirm a permit held on a minority") {
        // A, B: our permit 0; C: another value; D: our stray permit 1; E: another value.
        const std::vector<int> answers{0, 0, other_value, 1, other_value};
        for (const auto& order : orders_of(answers.size())) {
            const verdict v = extend_with(answers, 2, order);
            CHECK(v.end == ending::failed);
            CHECK(v.code == errc::not_held);
        }
        // The same with permit 0 on a majority: confirmed, the stray beside it or not.
        for (const auto& order : orders_of(5))
            CHECK(extend_with({0, 0, 0, 1, other_value}, 2, order).end == ending::extended);
    }

    TEST_CASE("the failure names how many confirmed one permit, and the stray as ok") {
        extend_settings s = settings;
        s.permits = 2;
        extend_decision d{5, s};
        extend_lock_view lock = held_lock({});
        lock.adopted = true;
        REQUIRE(d.start(lock, t0).send_extends);
        extend_actions a;
        const std::vector<int> answers{0, 0, other_value, 1, other_value};
        for (std::size_t node = 0; node < answers.size() && a.end == ending::none; ++node) {
            const permit_reply r{answers[node]};
            a = d.on_reply(node, script_form::evalsha, r.event(), lock, t0 + 5ms);
        }
        REQUIRE(a.end == ending::failed);
        const redlock::error e = d.failure_error(a, name_of);
        CHECK(e.message.find("(2 of 5 confirmed, 3 needed") != std::string::npos);
        REQUIRE(e.nodes.size() == 5);
        CHECK(e.nodes[3].status == node_status::ok);
    }

    TEST_CASE(
        "every answer pattern: confirmed exactly when one permit was extended on a "
        "majority") {
        struct shape {
            std::size_t nodes;
            int permits;
        };
        for (const shape sh : {shape{3, 2}, shape{3, 3}, shape{5, 2}, shape{5, 3}}) {
            // Each node: timed out, another value, or one of the K permits.
            const int choices = sh.permits + 2;
            std::size_t patterns = 1;
            for (std::size_t i = 0; i < sh.nodes; ++i)
                patterns *= static_cast<std::size_t>(choices);
            const std::size_t needed = sh.nodes / 2 + 1;
            const auto orders = orders_of(sh.nodes);
            for (std::size_t p = 0; p < patterns; ++p) {
                std::vector<int> answers(sh.nodes);
                std::size_t rest = p;
                for (auto& a : answers) {
                    a = static_cast<int>(rest % static_cast<std::size_t>(choices)) - 2;
                    rest /= static_cast<std::size_t>(choices);
                }
                std::size_t best = 0;
                for (int permit = 0; permit < sh.permits; ++permit) {
                    best = std::max(best, static_cast<std::size_t>(
                                              std::count(answers.begin(), answers.end(), permit)));
                }
                const auto failures =
                    static_cast<std::size_t>(std::count(answers.begin(), answers.end(), timed_out));
                for (const auto& order : orders) {
                    const verdict v = extend_with(answers, sh.permits, order);
                    if (best >= needed) {
                        if (v.end != ending::extended)
                            FAIL_CHECK("not confirmed: " << text_of(answers));
                    } else if (v.end != ending::failed) {
                        FAIL_CHECK("confirmed with no permit on a majority: " << text_of(answers));
                    } else if (failures == 0 && v.code != errc::not_held) {
                        // Every node answered: a definite "not ours" on a majority.
                        FAIL_CHECK("not not_held: " << text_of(answers));
                    } else if (best + failures >= needed && v.code != errc::quorum_unreachable) {
                        // The failed nodes could have confirmed it: unreachable.
                        // (Between the two, the reason depends on what was still
                        // unanswered when it was decided, as for any extend.)
                        FAIL_CHECK("not quorum_unreachable: " << text_of(answers));
                    }
                }
            }
        }
    }

    TEST_CASE("a node's permit is read from {ttl, permit}, and a plain number names none") {
        const permit_reply one{1};
        CHECK(extend_decision::answer_of(one.event()) == extend_answer::extended);
        CHECK(extend_decision::permit_of(one.event()) == 1);
        const canned_reply plain = canned_reply::integer(9'000);
        CHECK(extend_decision::answer_of(plain.event()) == extend_answer::extended);
        CHECK(extend_decision::permit_of(plain.event()) == permit_tally::none);
        const permit_reply other{other_value};
        CHECK(extend_decision::answer_of(other.event()) == extend_answer::other_value);
        CHECK(extend_decision::permit_of(other.event()) == permit_tally::none);
        const permit_reply late{timed_out};
        CHECK(extend_decision::answer_of(late.event()) == extend_answer::failed);
    }
}
