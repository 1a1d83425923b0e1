// The CLI's "did you mean" (cli/suggest.hpp): the distance, and which known
// subcommand or flag a mistyped one is taken for.

#include "suggest.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using redlock::cli::closest_word;
using redlock::cli::typo_distance;

TEST_SUITE("cli suggest") {
    TEST_CASE("typo_distance counts an adjacent transposition as one edit") {
        CHECK(typo_distance("acquire", "acquire") == 0);
        CHECK(typo_distance("aquire", "acquire") == 1);
        CHECK(typo_distance("relaese", "release") == 1);
        CHECK(typo_distance("resurce", "resource") == 1);
        CHECK(typo_distance("", "run") == 3);
        CHECK(typo_distance("run", "") == 3);
        CHECK(typo_distance("status", "check") > 2);
    }

    TEST_CASE("closest_word names the subcommand or flag a typo meant, or nothing") {
        const std::vector<std::string> subcommands{"run",    "acquire",    "release", "extend",
                                                   "status", "check",      "list",    "break",
                                                   "audit",  "check-fence"};
        CHECK(closest_word("aquire", subcommands) == "acquire");
        CHECK(closest_word("relase", subcommands) == "release");
        CHECK(closest_word("stauts", subcommands) == "status");
        CHECK(closest_word("rnu", subcommands) == "run");  // a transposition is one edit
        CHECK(closest_word("rnx", subcommands).empty());   // 2 edits: too far for 3 letters
        CHECK(closest_word("rum", subcommands) == "run");
        CHECK(closest_word("deploy", subcommands).empty());
        CHECK(closest_word("", subcommands).empty());

        const std::vector<std::string> flags{"resource", "ttl-ms", "wait-ms", "value", "shared"};
        CHECK(closest_word("resurce", flags) == "resource");
        CHECK(closest_word("ttl", flags) == "ttl-ms");  // a missing unit suffix
        CHECK(closest_word("wait", flags) == "wait-ms");
        CHECK(closest_word("sharde", flags) == "shared");
        CHECK(closest_word("frobnicate", flags).empty());
    }
}
