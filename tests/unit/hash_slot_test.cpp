#include "sansio/hash_slot.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace redlock::detail;

TEST_CASE("key_slot matches CLUSTER KEYSLOT for known keys") {
    // Values from the Redis Cluster specification and redis-cli CLUSTER KEYSLOT.
    CHECK(key_slot("123456789") == 12739);  // CRC16/XMODEM check value 0x31C3
    CHECK(key_slot("foo") == 12182);
    CHECK(key_slot("bar") == 5061);
    CHECK(key_slot("{user1000}.following") == key_slot("{user1000}.followers"));
    CHECK(key_slot("{user1000}.following") == key_slot("user1000"));
    CHECK(key_slot("") == 0);
}

TEST_CASE("hash_tag_of follows the first-brace rule") {
    CHECK(hash_tag_of("foo{bar}{zap}") == "bar");
    CHECK(hash_tag_of("foo{}{bar}") == "foo{}{bar}");  // empty first tag: the whole key
    CHECK(hash_tag_of("foo{{bar}}zap") == "{bar");
    CHECK(hash_tag_of("foo{bar") == "foo{bar");
    CHECK(hash_tag_of("}{x}") == "x");
}

TEST_CASE("every key made from a tagged resource hashes to one slot") {
    const std::string resources[] = {"orders", "a}b", "{}x", "x{", "{a}b", "a{b}c{d}", "{", "a}",
                                     "long resource name with spaces", "{{}}", "é{ü}"};
    for (const auto& r : resources) {
        CAPTURE(r);
        const std::string tagged = tagged_resource(r);
        const auto slot = key_slot("redlock:" + tagged);
        CHECK(key_slot("redlock-fence:" + tagged) == slot);
        CHECK(key_slot("redlock-queue:" + tagged + "|permits") == slot);
        CHECK(key_slot("redlock:" + tagged + "|readers") == slot);
        CHECK(key_slot("redlock:" + tagged + "|permit|17") == slot);
        CHECK(key_slot(tagged) == slot);
        CHECK(resource_slot(r) == slot);
    }
    CHECK_FALSE(taggable("}"));
    CHECK_FALSE(taggable("}x"));
    CHECK_FALSE(taggable(""));
    CHECK(taggable("}{x}"));
    CHECK(tagged_resource("orders") == "{orders}");
    CHECK(tagged_resource("{order:7}:items") == "{order:7}:items");
    CHECK(key_slot("p:" + tagged_resource("{order:7}:items")) ==
          key_slot("p:" + tagged_resource("{order:7}:payments")));
}
