// request_fifo without sockets: the numbers requests get, the commands kept for a routed
// member's resend (watched requests), disown by a masked number, and where hand_on sends an
// outcome. Every sequence of up to 6 operations is played against a plain model.

#include "sansio/request_fifo.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace {

using redlock::detail::hand_on;
using redlock::detail::reply;
using redlock::detail::reply_event;
using redlock::detail::reply_kind;
using redlock::detail::reply_sink;
using redlock::detail::reply_watcher;
using redlock::detail::request_fifo;
using redlock::detail::request_status;
using redlock::detail::request_watch;
using redlock::detail::watched_request;

struct counting_sink final : reply_sink {
    std::vector<std::uint32_t> tags;
    void on_reply(std::uint32_t tag, const reply_event&) noexcept override { tags.push_back(tag); }
};

struct counting_watcher final : reply_watcher {
    std::vector<watched_request> seen;
    std::vector<std::string> commands;  // copies: the views die with the next push
    void on_unusual(const watched_request& r, const reply_event&) noexcept override {
        seen.push_back(r);
        commands.emplace_back(r.command);
    }
};

enum class op : std::uint8_t { push_plain, push_short, push_long, pop, disown_front, take_all };
constexpr std::array ops{op::push_plain, op::push_short,   op::push_long,
                         op::pop,        op::disown_front, op::take_all};

struct model_request {
    std::uint32_t number;
    bool watched;
    std::string command;
    bool disowned;
};

/// Plays `sequence`; every answer is checked against the model. Returns false on the first
/// mismatch (CHECKs say which).
auto play(const std::vector<op>& sequence) -> bool {
    counting_sink sink;
    counting_watcher watcher;
    request_fifo fifo;
    std::deque<model_request> model;
    std::uint32_t next_number = 0;
    std::uint32_t tag = 0;
    for (const op o : sequence) {
        switch (o) {
            case op::push_plain:
            case op::push_short:
            case op::push_long: {
                const bool watched = o != op::push_plain;
                // A long command passes the kept buffer's first capacity (512 bytes): it grows.
                const std::string command(o == op::push_long ? 600 : 7,
                                          static_cast<char>('a' + tag % 26));
                const std::uint32_t n =
                    watched ? fifo.push_watched(&sink, tag++, 0, {&watcher, 42, 3}, command)
                            : fifo.push(&sink, tag++, 0);
                if (n != next_number) return false;
                model.push_back({next_number++, watched, watched ? command : "", false});
                break;
            }
            case op::pop: {
                if (model.empty()) break;
                const model_request expected = model.front();
                model.pop_front();
                if (fifo.front_number() != expected.number) return false;
                const request_fifo::request r = fifo.pop_front();
                if (expected.disowned != (r.sink == nullptr)) return false;
                if (expected.watched && fifo.popped_command() != expected.command) return false;
                const request_watch w = fifo.watch_of(r);
                if ((w.watcher == &watcher) != expected.watched) return false;
                if (expected.watched && (w.slot != 42 || w.route != 3)) return false;
                break;
            }
            case op::disown_front: {
                if (model.empty()) break;
                // The number as a routed member keeps it: its low 24 bits, other bits above.
                const std::uint32_t masked = (model.front().number & 0xFFFFFF) | 0xAB000000;
                const bool took = fifo.disown(masked, &sink, 0xFFFFFF);
                if (took == model.front().disowned) return false;
                model.front().disowned = true;
                break;
            }
            case op::take_all: {
                const auto all = fifo.take_all();
                if (all.size() != model.size()) return false;
                model.clear();
                break;
            }
        }
        if (fifo.size() != model.size()) return false;
    }
    return true;
}

void enumerate(std::vector<op>& prefix, std::size_t depth, std::size_t& played, bool& ok) {
    if (!ok) return;
    ++played;
    if (!play(prefix)) {
        ok = false;
        std::string text;
        for (const op o : prefix) text += std::to_string(static_cast<int>(o)) + " ";
        FAIL_CHECK("sequence: " << text);
        return;
    }
    if (depth == 0) return;
    for (const op o : ops) {
        prefix.push_back(o);
        enumerate(prefix, depth - 1, played, ok);
        prefix.pop_back();
    }
}

}  // namespace

TEST_CASE(
    "request_fifo: every sequence of 6 pushes, pops, disowns and take_alls keeps "
    "numbers and commands") {
    std::vector<op> prefix;
    std::size_t played = 0;
    bool ok = true;
    enumerate(prefix, 6, played, ok);
    CHECK(ok);
    CHECK(played == 55'987);  // 1 + 6 + ... + 6^6
}

TEST_CASE("request_fifo: kept commands survive the buffer's moves and growth, in any mix") {
    // Long runs the enumeration cannot reach: up to 64 in flight, commands of 1 to 700 bytes,
    // so the kept bytes are moved down (answered ones in front) and reallocated, many times.
    counting_sink sink;
    counting_watcher watcher;
    request_fifo fifo;
    std::deque<std::string> model;
    std::uint32_t state = 12345;
    const auto next = [&state] {
        state = state * 1103515245U + 12345U;
        return state >> 8;
    };
    std::size_t checked = 0;
    for (int i = 0; i < 200'000; ++i) {
        const bool push = model.empty() || (model.size() < 64 && next() % 2 == 0);
        if (push) {
            std::string command(1 + next() % 700, static_cast<char>('a' + i % 26));
            command.front() = static_cast<char>('A' + i % 26);
            if (next() % 4 == 0) {
                fifo.push(&sink, 0, 0);  // a plain request keeps nothing
                model.emplace_back();
            } else {
                fifo.push_watched(&sink, 0, 0, {&watcher, 1, 2}, command);
                model.push_back(command);
            }
        } else {
            const request_fifo::request r = fifo.pop_front();
            REQUIRE(r.watched == !model.front().empty());
            if (r.watched) {
                REQUIRE(fifo.popped_command() == model.front());
                ++checked;
            }
            model.pop_front();
        }
    }
    CHECK(checked > 50'000);
}

TEST_CASE("request_fifo: a masked disown finds its request across the numbers' wrap") {
    request_fifo fifo;
    counting_sink sink;
    // 2^24 + 5 requests answered: the full number and its low 24 bits now differ.
    for (std::uint32_t i = 0; i < (1U << 24) + 5; ++i) {
        fifo.push(&sink, i, 0);
        (void)fifo.pop_front();
    }
    const std::uint32_t n = fifo.push(&sink, 1, 0);
    CHECK(n == (1U << 24) + 5);
    CHECK_FALSE(fifo.disown(n & 0xFFFFFF, &sink));  // unmasked: another number
    CHECK(fifo.disown(n & 0xFFFFFF, &sink, 0xFFFFFF));
    CHECK_FALSE(fifo.disown(n & 0xFFFFFF, &sink, 0xFFFFFF));  // once
}

TEST_CASE(
    "hand_on: a watched request's unusual outcome goes to its watcher, the rest to "
    "the sink, nothing for a disowned one") {
    counting_sink sink;
    counting_watcher watcher;
    const reply ok_reply{reply_kind::status, 0, "OK", {}};
    const reply moved{reply_kind::error, 0, "MOVED 12 127.0.0.1:7001", {}};
    const std::array events{
        reply_event{request_status::reply, &ok_reply, {}},
        reply_event{request_status::reply, &moved, {}},
        reply_event{request_status::timeout, nullptr, "late"},
        reply_event{request_status::unreachable, nullptr, "down"},
        reply_event{request_status::stopped, nullptr, "stopping"},
    };
    for (const bool watched : {false, true}) {
        for (const bool disowned : {false, true}) {
            for (std::size_t e = 0; e < events.size(); ++e) {
                CAPTURE(watched);
                CAPTURE(disowned);
                CAPTURE(e);
                sink.tags.clear();
                watcher.seen.clear();
                watcher.commands.clear();
                const request_watch w = watched ? request_watch{&watcher, 77, 5} : request_watch{};
                hand_on(disowned ? nullptr : &sink, 9, w, 1234, "SET", events[e]);
                const bool plain = e == 0;
                const bool to_watcher = !disowned && watched && !plain;
                const bool to_sink = !disowned && !to_watcher;
                CHECK(watcher.seen.size() == (to_watcher ? 1U : 0U));
                CHECK(sink.tags.size() == (to_sink ? 1U : 0U));
                if (to_watcher) {
                    CHECK(watcher.seen[0].sink == &sink);
                    CHECK(watcher.seen[0].tag == 9);
                    CHECK(watcher.seen[0].slot == 77);
                    CHECK(watcher.seen[0].route == 5);
                    CHECK(watcher.seen[0].number == 1234);
                    CHECK(watcher.commands[0] == "SET");
                }
            }
        }
    }
}
