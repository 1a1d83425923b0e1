#include "sansio/hash_slot.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

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
    const std::string resources[] = {"orders", "a}b",  "{}x",
                                     "x{",     "{a}b", "a{b}c{d}",
                                     "{",      "a}",   "long resource name with spaces",
                                     "{{}}",   "é{ü}"};
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

TEST_CASE("untagged_resource reads a key's T back as a resource that names the same lock") {
    CHECK(untagged_resource("{orders:42}") == "orders:42");
    CHECK(untagged_resource("{user:7}:cart") == "{user:7}:cart");
    CHECK(untagged_resource("{a}b}") == "{a}b}");  // "a}b" wrapped: kept, it has a tag of its own
    CHECK(untagged_resource("{a{b}") == "{a{b}");
    CHECK(untagged_resource("{}") == "{}");
    // Every resource over a small alphabet, to length 5: its T read back is a taggable
    // resource with the same T, and a resource without braces comes back as it was.
    const std::string alphabet = "a{}|";
    std::vector<std::string> resources{""};
    for (std::size_t length = 0, from = 0; length < 5; ++length) {
        const std::size_t to = resources.size();
        for (std::size_t i = from; i < to; ++i) {
            for (const char c : alphabet) resources.push_back(resources[i] + c);
        }
        from = to;
    }
    std::size_t checked = 0;
    for (const auto& r : resources) {
        if (!taggable(r)) continue;
        CAPTURE(r);
        const std::string t = tagged_resource(r);
        const std::string back = untagged_resource(t);
        CHECK(taggable(back));
        CHECK(tagged_resource(back) == t);
        CHECK(has_own_hash_tag(t));
        if (r.find_first_of("{}") == std::string::npos) CHECK(back == r);
        ++checked;
    }
    CHECK(checked > 500);
}
