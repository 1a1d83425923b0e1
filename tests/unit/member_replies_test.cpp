// What a routed member keeps and decides without a socket: a reply copied past
// its call (owned_reply), WAIT's verdict on a write (replica_ack), and what
// Sentinel says (GET-MASTER-ADDR-BY-NAME, +switch-master).

#include "reply_tree.hpp"
#include "sansio/owned_reply.hpp"
#include "sansio/sentinel_replies.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace redlock::detail;
using redlock_test::reply_tree;

TEST_CASE("owned_reply is a deep copy that outlives the original") {
    owned_reply copy;
    {
        auto t = std::make_unique<reply_tree>();
        const reply* original = t->array({t->integer(1), t->string("value"),
                                          t->array({t->integer(-2), t->nil()}), t->array({})});
        copy = owned_reply{original};
    }  // the original's memory is gone
    const reply* r = copy.get();
    REQUIRE(r != nullptr);
    REQUIRE(is_array(r, 4));
    CHECK(array_integer(r, 0) == 1);
    CHECK(reply_text(element_of(r, 1)) == "value");
    CHECK(array_integer(element_of(r, 2), 0) == -2);
    CHECK(is_nil(element_of(element_of(r, 2), 1)));
    CHECK(is_array(element_of(r, 3), 0));
    owned_reply moved = std::move(copy);
    CHECK(reply_text(element_of(moved.get(), 1)) == "value");
    CHECK(owned_reply{}.get() == nullptr);
    reply_tree t;
    CHECK(reply_text(owned_reply{t.error("ERR x")}.get()) == "ERR x");
}

TEST_CASE("replica_ack counts a write only when WAIT says enough replicas have it") {
    reply_tree t;
    const auto wait = [&](long long acked) {
        return reply_event{request_status::reply, t.integer(acked), {}};
    };
    CHECK(replica_ack(wait(1), 1).counts);
    CHECK(replica_ack(wait(2), 1).counts);
    CHECK_FALSE(replica_ack(wait(0), 1).counts);
    const std::string short_of =
        "not all of the 1 replicas wait_replicas asks for acknowledged the write in time";
    CHECK(replica_ack(wait(0), 1).cause == short_of + " (WAIT: 0)");
    CHECK_FALSE(replica_ack(wait(1), 2).counts);
    CHECK_FALSE(replica_ack(reply_event{request_status::timeout, nullptr, "no reply"}, 1).counts);
    // WAIT waits as long as the request may: a timeout is the same cause, in the same words.
    CHECK(replica_ack(reply_event{request_status::timeout, nullptr, "no reply"}, 1).cause ==
          short_of + " (WAIT got no answer within request_timeout_ms)");
    CHECK_FALSE(
        replica_ack(reply_event{request_status::reply, t.error("ERR WAIT cannot be used"), {}}, 1)
            .counts);
}

TEST_CASE("GET-MASTER-ADDR-BY-NAME and +switch-master are read") {
    reply_tree t;
    const auto found = read_master_address(t.array({t.string("127.0.0.1"), t.string("6380")}));
    REQUIRE(found.address);
    CHECK(*found.address == master_address{"127.0.0.1", 6380});
    CHECK(read_master_address(t.nil()).unknown);
    CHECK_FALSE(read_master_address(t.nil()).address);
    CHECK_FALSE(read_master_address(t.array({t.string("h"), t.string("0")})).error.empty());
    CHECK_FALSE(read_master_address(t.error("ERR unknown command")).error.empty());
    CHECK_FALSE(read_master_address(t.array({t.string("h")})).error.empty());

    const auto to = read_switch_master("mymaster 127.0.0.1 6379 127.0.0.1 6380", "mymaster");
    REQUIRE(to);
    CHECK(*to == master_address{"127.0.0.1", 6380});
    CHECK_FALSE(read_switch_master("other 127.0.0.1 6379 127.0.0.1 6380", "mymaster"));
    CHECK_FALSE(read_switch_master("mymaster 127.0.0.1 6379 127.0.0.1", "mymaster"));
    CHECK_FALSE(read_switch_master("mymaster 127.0.0.1 6379 127.0.0.1 x", "mymaster"));
}
