// The reentry registry without a client: which lock an owner re-enters, that a
// hold is never taken back from zero, and what happens to acquisitions that
// wait for their owner's acquisition in flight.
#include "client/reentry_registry.hpp"

#include "operations/lock_state.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using redlock::lock_options;
using redlock::detail::lock_state;
using redlock::detail::reentry_registry;
using namespace std::chrono_literals;

namespace {

auto held_state() -> std::shared_ptr<lock_state> {
    auto s = std::make_shared<lock_state>();
    s->resources = {"r"};
    // Moves, not `= "v"`: assigning a literal makes GCC 12 at -O2 raise a false
    // -Wrestrict in basic_string::_M_replace.
    s->value = std::string{"v"};
    s->owner = std::string{"o"};
    s->set_valid_until(std::chrono::steady_clock::now() + 10s);
    return s;
}

auto owned(const char* owner) -> lock_options {
    lock_options o;
    o.owner = owner;
    return o;
}

}  // namespace

TEST_CASE("reentry keys tell kinds, permit counts, owners and resource lists apart") {
    const auto x = reentry_registry::key_of({"a"}, owned("o"));
    auto shared = owned("o");
    shared.shared = true;
    auto four = owned("o");
    four.permits = 4;
    auto five = owned("o");
    five.permits = 5;
    const std::vector<std::string> keys = {
        x,
        reentry_registry::key_of({"a"}, shared),
        reentry_registry::key_of({"a"}, four),
        reentry_registry::key_of({"a"}, five),
        reentry_registry::key_of({"a"}, owned("p")),
        reentry_registry::key_of({"a", "b"}, owned("o")),
        // A NUL in a name cannot make one resource list look like another.
        reentry_registry::key_of({std::string{"a\0b", 3}}, owned("o")),
        reentry_registry::key_of({"b"}, owned("o")),
    };
    for (std::size_t i = 0; i < keys.size(); ++i) {
        for (std::size_t j = i + 1; j < keys.size(); ++j) {
            CAPTURE(i);
            CAPTURE(j);
            CHECK(keys[i] != keys[j]);
        }
    }
    CHECK(reentry_registry::key_of({"a"}, owned("o")) == x);
}

TEST_CASE("a hold is added to a held lock, never to one whose last hold was released") {
    auto s = held_state();
    CHECK(reentry_registry::add_hold(*s));
    CHECK(s->holds.load() == 2);
    s->holds.store(0);
    CHECK_FALSE(reentry_registry::add_hold(*s));
    CHECK(s->holds.load() == 0);
}

TEST_CASE("an owner re-enters only a lock that is still valid") {
    reentry_registry reg;
    const auto key = reentry_registry::key_of({"r"}, owned("o"));
    CHECK(reg.reenter(key) == nullptr);  // nothing held yet
    reg.begin(key);
    CHECK(reg.in_flight(key));
    auto s = held_state();
    reg.end(key, s);
    CHECK_FALSE(reg.in_flight(key));
    CHECK(reg.reenter(key) == s);
    CHECK(s->holds.load() == 2);

    s->lost.store(true);  // auto-renewal gave up on it
    CHECK(reg.reenter(key) == nullptr);
    s->lost.store(false);
    s->set_valid_until(std::chrono::steady_clock::now() - 1ms);  // expired
    CHECK(reg.reenter(key) == nullptr);
    s.reset();  // its last handle dropped
    CHECK(reg.reenter(key) == nullptr);
}

TEST_CASE("waiting acquisitions run once the owner's acquisition ends, or once cancelled") {
    reentry_registry reg;
    const auto key = reentry_registry::key_of({"r"}, owned("o"));
    reg.begin(key);
    std::vector<std::string> ran;
    reg.wait(key, 7, [&](bool cancelled) { ran.push_back(cancelled ? "7 cancelled" : "7"); });
    reg.wait(key, 8, [&](bool cancelled) { ran.push_back(cancelled ? "8 cancelled" : "8"); });
    CHECK(reg.cancel(8));
    CHECK_FALSE(reg.cancel(8));  // once
    CHECK_FALSE(reg.cancel(99));
    REQUIRE(ran.size() == 1);
    CHECK(ran[0] == "8 cancelled");
    reg.end(key, nullptr);  // it failed: the waiter tries on its own
    REQUIRE(ran.size() == 2);
    CHECK(ran[1] == "7");
    CHECK_FALSE(reg.in_flight(key));
}

TEST_CASE(
    "route: an owner's acquisition goes ahead, waits behind the one in flight, or re-enters") {
    using redlock::detail::acquisition_request;
    std::vector<std::pair<acquisition_request, bool>> resumed;
    reentry_registry reg{[&](acquisition_request r, bool cancelled) {
        resumed.emplace_back(std::move(r), cancelled);
    }};
    auto request = [](std::uint64_t ticket, lock_options options) {
        return acquisition_request{ticket, {"r"}, std::move(options), nullptr, nullptr};
    };

    // Without an owner: untouched, not even its callback.
    auto plain = request(1, {});
    CHECK(reg.route(plain).goes_ahead());
    CHECK_FALSE(plain.done);

    // The owner's first: goes ahead, its callback now also records the outcome.
    int first_heard = 0;
    auto first = request(2, owned("o"));
    first.done = [&](redlock::result<redlock::lock>) { ++first_heard; };
    CHECK(reg.route(first).goes_ahead());
    CHECK(reg.in_flight(reentry_registry::key_of({"r"}, owned("o"))));

    // A second while it is in flight waits, and a third is cancelled while waiting.
    auto second = request(3, owned("o"));
    CHECK(reg.route(second).waits);
    auto third = request(4, owned("o"));
    CHECK(reg.route(third).waits);
    CHECK(reg.cancel(4));
    REQUIRE(resumed.size() == 1);
    CHECK(resumed[0].first.ticket == 4);
    CHECK(resumed[0].second);

    // The first is granted: the second is resumed, and routed again re-enters it.
    auto s = held_state();
    first.done(lock_state::handle(s));
    CHECK(first_heard == 1);
    REQUIRE(resumed.size() == 2);
    CHECK(resumed[1].first.ticket == 3);
    CHECK_FALSE(resumed[1].second);
    const auto again = reg.route(resumed[1].first);
    CHECK(again.held == s);
    CHECK(s->holds.load() == 2);
}
