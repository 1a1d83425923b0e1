// Command encoding: what every node receives is the RESP that hiredis's formatter writes,
// encoded once per fan-out (detail::encoded_command) and shared by every node.

#include "detail/command.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

using redlock::detail::encoded_command;

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
        for (const auto& a : args) expected += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
        CHECK(many.bytes() == expected);
    }

    TEST_CASE("a moved-from command is empty and the bytes move with the object") {
        encoded_command first{"PING"};
        const std::string_view bytes = first.bytes();

        encoded_command second{std::move(first)};

        CHECK(second.bytes() == "*1\r\n$4\r\nPING\r\n");
        CHECK(second.bytes().data() == bytes.data());  // moved, not copied
        CHECK(first.bytes().empty());                  // NOLINT(bugprone-use-after-move)
    }
}
