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
