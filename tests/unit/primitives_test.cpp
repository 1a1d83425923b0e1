#include "redlock/error.hpp"
#include "sansio/scripts.hpp"
#include "sansio/sha1.hpp"
#include "transport/os_random.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

using namespace std::chrono_literals;

TEST_SUITE("sha1") {
    TEST_CASE("matches the published test vectors") {
        CHECK(redlock::detail::sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        CHECK(redlock::detail::sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
        CHECK(
            redlock::detail::sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
        CHECK(redlock::detail::sha1_hex(std::string(1'000'000, 'a')) ==
              "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    }

    TEST_CASE("a script is named by the SHA-1 of its exact source") {
        const auto& s = redlock::detail::release_script();
        CHECK(s.sha == redlock::detail::sha1_hex(s.source));
        CHECK(s.sha.size() == 40);
    }
}

TEST_SUITE("random_source") {
    TEST_CASE("lock values are 32 lower-case hex digits") {
        redlock::detail::random_source rng;
        const std::string v = rng.lock_value();
        CHECK(v.size() == 32);
        CHECK(std::all_of(v.begin(), v.end(),
                          [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
    }

    TEST_CASE("lock values do not repeat across many draws and block refills") {
        redlock::detail::random_source rng;
        std::set<std::string> seen;
        for (int i = 0; i < 10'000; ++i) seen.insert(rng.lock_value());
        CHECK(seen.size() == 10'000);
    }

    TEST_CASE("two sources do not produce the same values") {
        redlock::detail::random_source a;
        redlock::detail::random_source b;
        CHECK(a.lock_value() != b.lock_value());
    }

    TEST_CASE("jitter stays within [0, bound] and spreads over it") {
        redlock::detail::random_source rng;
        std::set<long> seen;
        for (int i = 0; i < 2'000; ++i) {
            const auto j = rng.jitter(10ms);
            REQUIRE(j >= 0ms);
            REQUIRE(j <= 10ms);
            seen.insert(static_cast<long>(j.count()));
        }
        CHECK(seen.size() == 11);  // every value in 0..10 shows up
        CHECK(rng.jitter(0ms) == 0ms);
    }
}

TEST_SUITE("error names") {
    TEST_CASE("every errc has its enumerator's name, and an unknown value says so") {
        using redlock::errc;
        CHECK(std::string{redlock::to_string(errc::contended)} == "contended");
        CHECK(std::string{redlock::to_string(errc::quorum_unreachable)} == "quorum_unreachable");
        CHECK(std::string{redlock::to_string(errc::validity_expired)} == "validity_expired");
        CHECK(std::string{redlock::to_string(errc::not_held)} == "not_held");
        CHECK(std::string{redlock::to_string(errc::cancelled)} == "cancelled");
        CHECK(std::string{redlock::to_string(errc::invalid_argument)} == "invalid_argument");
        CHECK(std::string{redlock::to_string(errc::invalid_config)} == "invalid_config");
        CHECK(std::string{redlock::to_string(errc::client_stopped)} == "client_stopped");
        CHECK(std::string{redlock::to_string(errc::would_deadlock)} == "would_deadlock");
        CHECK(std::string{redlock::to_string(errc::lock_lost)} == "lock_lost");
        CHECK(std::string{redlock::to_string(static_cast<errc>(999))} == "unknown");
    }
}
