// Command encoding: what every node receives is the RESP that hiredis's formatter writes
// (hiredis is the oracle here), encoded once per fan-out (detail::encoded_command) and
// shared by every node.

#include "sansio/command.hpp"

#include "sansio/reply.hpp"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>

#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using redlock::detail::encoded_command;

namespace {

/// What hiredis's own formatter writes for `argv`.
auto hiredis_encoding(const std::vector<std::string>& argv) -> std::string {
    std::vector<const char*> ptrs;
    std::vector<std::size_t> lens;
    for (const auto& a : argv) {
        ptrs.push_back(a.data());
        lens.push_back(a.size());
    }
    sds out = nullptr;
    const int len =
        redisFormatSdsCommandArgv(&out, static_cast<int>(argv.size()), ptrs.data(), lens.data());
    REQUIRE(len >= 0);
    std::string bytes{out, static_cast<std::size_t>(len)};
    redisFreeSdsCommand(out);
    return bytes;
}

}  // namespace

TEST_SUITE("encoded_command") {
    TEST_CASE("a SET is encoded as a RESP array of bulk strings") {
        const encoded_command set{"SET", "redlock:orders:42", "0123abcd", "NX", "PX", "30000"};

        CHECK(set.bytes() ==
              "*6\r\n$3\r\nSET\r\n$17\r\nredlock:orders:42\r\n$8\r\n0123abcd\r\n$2\r\nNX\r\n"
              "$2\r\nPX\r\n$5\r\n30000\r\n");
    }

    TEST_CASE("arguments with CR, LF and NUL bytes are sent by length, unchanged") {
        const std::string binary{"a\r\nb\0c", 6};
        const encoded_command get{"GET", binary};

        CHECK(get.bytes() == std::string_view{"*2\r\n$3\r\nGET\r\n$6\r\na\r\nb\0c\r\n", 25});
    }

    TEST_CASE("more arguments than fit on the stack, and empty ones, are all encoded") {
        std::vector<std::string> args;
        for (int i = 0; i < 40; ++i) args.push_back(i % 5 == 0 ? "" : std::to_string(i));
        std::vector<std::string_view> argv{args.begin(), args.end()};

        const encoded_command many{std::span<const std::string_view>{argv}};

        std::string expected = "*40\r\n";
        // Appended piece by piece: `"$" + std::to_string(...)` makes GCC 12 at -O2
        // raise a false -Wrestrict in the insert that operator+ inlines.
        for (const auto& a : args) {
            expected.append("$").append(std::to_string(a.size())).append("\r\n");
            expected.append(a).append("\r\n");
        }
        CHECK(many.bytes() == expected);
    }

    TEST_CASE("a moved-from command is empty, a large one's bytes move without a copy") {
        encoded_command small{"PING"};
        encoded_command moved_small{std::move(small)};
        CHECK(moved_small.bytes() == "*1\r\n$4\r\nPING\r\n");
        CHECK(small.bytes().empty());  // NOLINT(bugprone-use-after-move)

        const std::string big(1000, 'x');  // beyond the in-place capacity
        encoded_command large{"SET", big};
        const std::string_view bytes = large.bytes();
        encoded_command moved_large{std::move(large)};
        CHECK(moved_large.bytes().data() == bytes.data());
        CHECK(moved_large.bytes().size() == 4 + 9 + 7 + 1000 + 2);  // *2, $3 SET, $1000 ...
        CHECK(large.bytes().empty());  // NOLINT(bugprone-use-after-move)

        moved_small = std::move(moved_large);  // heap into in-place
        CHECK(moved_small.bytes().data() == bytes.data());
        encoded_command tiny{"GET", "k"};
        moved_small = std::move(tiny);  // in-place over heap
        CHECK(moved_small.bytes() == "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    }

    TEST_CASE("every encoding equals hiredis's, at and around each length boundary") {
        // Lengths that cross a digit count (9/10, 99/100, 999/1000) and the in-place
        // capacity (the whole command near 256 bytes), with random binary bytes.
        std::mt19937 rng{20261122};
        std::uniform_int_distribution<int> byte{0, 255};
        const std::size_t lengths[] = {0,   1,   9,   10,  11,  99,   100,  101,  200,
                                       220, 230, 235, 240, 999, 1000, 1001, 70000};
        for (const std::size_t first : lengths) {
            for (std::size_t argc = 1; argc <= 12; argc += 11) {
                std::vector<std::string> argv;
                for (std::size_t i = 0; i < argc; ++i) {
                    std::string a(i == 0 ? first : i * 3, '\0');
                    for (char& c : a) c = static_cast<char>(byte(rng));
                    argv.push_back(std::move(a));
                }
                const std::vector<std::string_view> views{argv.begin(), argv.end()};
                const encoded_command encoded{std::span<const std::string_view>{views}};
                CAPTURE(first);
                CAPTURE(argc);
                CHECK(encoded.bytes() == hiredis_encoding(argv));
                CHECK(encoded.bytes().size() ==
                      encoded_command::encoded_size(std::span<const std::string_view>{views}));
            }
        }
    }

    TEST_CASE("append_command appends after what the buffer already holds") {
        std::string out = "*1\r\n$4\r\nPING\r\n";
        redlock::detail::append_command(out, {"SET", "k", "v", "NX", "PX", "30000"});
        CHECK(out ==
              "*1\r\n$4\r\nPING\r\n" + hiredis_encoding({"SET", "k", "v", "NX", "PX", "30000"}));
    }
}
