// Who holds a lock (issue 26, item 1): the holder text is stored after the token in
// the value on every node, the nodes compare the whole value, status shows it, and a
// rival's `contended` error names it. Real servers.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <string>
#include <unistd.h>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

auto one_attempt() -> redlock::lock_options {
    redlock::lock_options o;
    o.attempts = 1;
    return o;
}

auto with_holder(std::string text) -> redlock::lock_options {
    auto o = one_attempt();
    o.holder = std::move(text);
    return o;
}

}  // namespace

TEST_SUITE("holder") {
    TEST_CASE_FIXTURE(cluster,
                      "the default holder is host, pid and program, stored on every node") {
        auto locks = make_client();
        const auto held = locks.acquire("h:default", one_attempt());
        REQUIRE(held);
        char host[256] = {};
        REQUIRE(gethostname(host, sizeof host - 1) == 0);
        const std::string expected = std::string{host} + ":" + std::to_string(getpid()) + " (" +
                                     program_invocation_short_name + ")";
        CHECK(held->holder() == expected);
        CHECK(held->value() == held->value().substr(0, 32) + "|" + expected);
        CHECK(redlock::holder_of(held->value()) == expected);
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return count_holding(key_of("h:default"), held->value()) == 5;
        }));
    }

    TEST_CASE_FIXTURE(cluster, "an empty holder leaves the bare 32-digit token") {
        auto locks = make_client();
        const auto held = locks.acquire("h:none", with_holder(""));
        REQUIRE(held);
        CHECK(held->value().size() == 32);
        CHECK(held->holder().empty());
    }

    TEST_CASE_FIXTURE(cluster, "a value with the token but another holder text releases nothing") {
        auto locks = make_client();
        const auto held = locks.acquire("h:exact", with_holder("build-7:4411 (nightly-report)"));
        REQUIRE(held);
        // acquire returns at a majority: the other grants are on their way.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return count_holding(key_of("h:exact"), held->value()) == 5;
        }));
        const std::string token = held->value().substr(0, 32);
        for (const std::string& forged :
             {token, token + "|build-7:4411", token + "|someone else"}) {
            CAPTURE(forged);
            const auto report = locks.release(locks.adopt("h:exact", forged));
            REQUIRE(report);
            CHECK(report->deleted == 0);
        }
        CHECK(count_holding(key_of("h:exact"), held->value()) == 5);
        const auto report = locks.release(*held);
        REQUIRE(report);
        // release returns once a majority deleted; the rest may still be pending.
        CHECK(report->majority());
        CHECK(report->deleted + report->pending == 5);
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s),
                                       [&] { return count_holding(key_of("h:exact")) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "status and a rival's contended error name the holder") {
        auto locks = make_client();
        const auto held = locks.acquire("h:named", with_holder("build-7:4411 (nightly-report)"));
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return count_holding(key_of("h:named"), held->value()) == 5;
        }));

        const auto seen = locks.status("h:named");
        REQUIRE(seen);
        REQUIRE(seen->majority_holder);
        CHECK(redlock::holder_of(*seen->majority_holder) == "build-7:4411 (nightly-report)");

        auto rival = make_client();
        const auto refused = rival.acquire("h:named", one_attempt());
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::contended);
        const std::string& message = refused.error().message;
        CAPTURE(message);
        CHECK(message.find("is held by build-7:4411 (nightly-report), ") != std::string::npos);
        CHECK(message.find(" left, on 5 of 5 nodes") != std::string::npos);
        CHECK(message.starts_with("resource 'h:named' is held by build-7"));
    }

    TEST_CASE_FIXTURE(cluster,
                      "a refused reader names the writer, and readers and permits carry one") {
        auto locks = make_client();
        const auto writer = locks.acquire("h:rw", with_holder("the writer"));
        REQUIRE(writer);
        auto reader_options = with_holder("a reader");
        reader_options.shared = true;
        const auto refused = make_client().acquire("h:rw", reader_options);
        REQUIRE_FALSE(refused);
        CAPTURE(refused.error().message);
        CHECK(refused.error().message.find("is held by a writer, the writer, ") !=
              std::string::npos);
        REQUIRE(locks.release(*writer));

        const auto reader = locks.acquire("h:rw", reader_options);
        REQUIRE(reader);
        CHECK(reader->holder() == "a reader");
        const auto seen = locks.status("h:rw");
        REQUIRE(seen);
        REQUIRE(seen->majority_readers.size() == 1);
        CHECK(redlock::holder_of(seen->majority_readers.front()) == "a reader");
        // A writer refused by readers hears who they are.
        const auto writer_refused = make_client().acquire("h:rw", one_attempt());
        REQUIRE_FALSE(writer_refused);
        CAPTURE(writer_refused.error().message);
        CHECK(writer_refused.error().message.find("is held by 1 reader (a reader)") !=
              std::string::npos);

        auto permit_options = with_holder("permit holder");
        permit_options.permits = 2;
        const auto permit = locks.acquire("h:sem", permit_options);
        REQUIRE(permit);
        const auto permits = locks.status("h:sem", 2);
        REQUIRE(permits);
        const auto& mine = permits->permit_holders.at(static_cast<std::size_t>(*permit->permit()));
        REQUIRE(mine.majority_holder);
        CHECK(redlock::holder_of(*mine.majority_holder) == "permit holder");
    }

    TEST_CASE_FIXTURE(cluster, "a holder text too long or with a control character is refused") {
        auto locks = make_client();
        for (const std::string& bad :
             {std::string(redlock::max_holder_length + 1, 'x'), std::string{"two\nlines"}}) {
            const auto refused = locks.acquire("h:bad", with_holder(bad));
            REQUIRE_FALSE(refused);
            CHECK(refused.error().code == redlock::errc::invalid_argument);
            CHECK(refused.error().message.starts_with("holder must"));
        }
        CHECK(count_holding(key_of("h:bad")) == 0);
        CHECK(locks.acquire("h:bad", with_holder(std::string(redlock::max_holder_length, 'x'))));
    }
}
