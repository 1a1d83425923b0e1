// Back-pressure (max_concurrent_acquisitions) as the pure decision it is:
// every sequence of arrivals (with and without a wait deadline), finishes and
// cancellations up to a length, for limits 0 to 3. After each event: no more
// than the limit run, no place stays free while one waits, waiting ones start
// in arrival order and never behind a later one, and each acquisition ends up
// exactly once started, cancelled or drained.
#include "sansio/admission_queue.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using redlock::detail::admission;
using redlock::detail::admission_queue;

namespace {

enum class event : std::uint8_t {
    arrive,           // an acquisition without a wait deadline
    arrive_deadline,  // one with lock_options::max_wait
    finish,           // a counted acquisition delivers its result
    cancel_first,     // the first waiting one is cancelled
    cancel_last,      // the last waiting one is cancelled
    cancel_other,     // a ticket that is not waiting (started, or unknown) is cancelled
};
constexpr std::size_t event_kinds = 6;

const char* const event_names[event_kinds] = {"arrive",       "arrive_deadline", "finish",
                                              "cancel_first", "cancel_last",     "cancel_other"};

enum class fate : std::uint8_t { started, started_later, cancelled, drained };

/// Move-only, as the client's entries are: its ticket, to check which came back.
using entry = std::unique_ptr<std::uint64_t>;

/// Replays `events` on a queue of `limit`; the first broken rule, or empty.
auto replay(int limit, const std::vector<event>& events) -> std::string {
    admission_queue<entry> queue{limit};
    const std::size_t places = limit > 0 ? static_cast<std::size_t>(limit) : 0;
    std::size_t running = 0;              // counted, started, not finished
    std::deque<std::uint64_t> waiting;    // in arrival order
    std::map<std::uint64_t, fate> fates;  // every acquisition's end
    std::uint64_t next_ticket = 1;

    auto record = [&](std::uint64_t ticket, fate f) -> std::string {
        if (!fates.emplace(ticket, f).second) return "ticket " + std::to_string(ticket) + " twice";
        return {};
    };
    auto came_back = [](const std::optional<entry>& e, std::uint64_t ticket) {
        return e && *e && **e == ticket;
    };

    for (const event e : events) {
        std::string problem;
        switch (e) {
            case event::arrive:
            case event::arrive_deadline: {
                const std::uint64_t ticket = next_ticket++;
                const bool deadline = e == event::arrive_deadline;
                entry carried = std::make_unique<std::uint64_t>(ticket);
                const admission a = queue.arrive(ticket, deadline, carried);
                if (places == 0 || deadline) {
                    // Outside the limit: starts at once, even past waiting ones.
                    if (a != admission::start) return "an uncounted arrival did not start";
                    if (!carried) return "an entry that started was taken";
                    problem = record(ticket, fate::started);
                } else if (running < places && waiting.empty()) {
                    if (a != admission::start_counted) return "a free place was refused";
                    if (!carried) return "an entry that started was taken";
                    ++running;
                    problem = record(ticket, fate::started);
                } else {
                    // No place, or others wait already: no overtaking.
                    if (a != admission::wait) return "started without a free place, or overtook";
                    if (carried) return "a waiting entry was not kept";
                    waiting.push_back(ticket);
                }
                break;
            }
            case event::finish: {
                queue.finished();
                if (running > 0) --running;
                while (auto turn = queue.next()) {
                    if (waiting.empty()) return "next() gave an entry nobody waited with";
                    if (!came_back(turn, waiting.front())) return "waiting ones out of order";
                    problem = record(waiting.front(), fate::started_later);
                    waiting.pop_front();
                    ++running;
                    if (!problem.empty()) return problem;
                }
                break;
            }
            case event::cancel_first:
            case event::cancel_last: {
                if (waiting.empty()) break;
                const auto it = e == event::cancel_first ? waiting.begin() : waiting.end() - 1;
                const std::uint64_t ticket = *it;
                if (!came_back(queue.take(ticket), ticket)) return "a cancelled entry not found";
                if (queue.take(ticket)) return "a cancelled entry taken twice";
                waiting.erase(it);
                problem = record(ticket, fate::cancelled);
                break;
            }
            case event::cancel_other: {
                // One that started or was cancelled already if there is one, else unknown.
                const std::uint64_t ticket = fates.empty() ? 999 : fates.rbegin()->first;
                if (queue.take(ticket)) return "took an entry that was not waiting";
                break;
            }
        }
        if (!problem.empty()) return problem;
        if (queue.running() != running) return "running() is not the counted ones started";
        if (queue.held_back() != waiting.size()) return "held_back() is not the waiting count";
        if (places > 0 && running > places) return "more running than the limit";
        if (!waiting.empty() && running != places) return "a place stays free while one waits";
    }
    const std::vector<entry> drained = queue.drain();
    if (drained.size() != waiting.size()) return "drain() lost or made up entries";
    for (std::size_t i = 0; i < drained.size(); ++i) {
        if (!drained[i] || *drained[i] != waiting[i]) return "drain() out of arrival order";
        if (auto problem = record(waiting[i], fate::drained); !problem.empty()) return problem;
    }
    if (queue.held_back() != 0 || queue.next()) return "entries left after drain()";
    if (fates.size() != next_ticket - 1) return "an acquisition has no end";
    return {};
}

auto spelled(const std::vector<event>& events) -> std::string {
    std::string out;
    for (const event e : events) {
        if (!out.empty()) out += ", ";
        out += event_names[static_cast<std::size_t>(e)];
    }
    return out;
}

}  // namespace

TEST_SUITE("admission queue") {
    TEST_CASE("every sequence of six events keeps the limit, the order and each entry once") {
        constexpr std::size_t length = 6;
        std::size_t sequences = 1;
        for (std::size_t i = 0; i < length; ++i) sequences *= event_kinds;
        for (const int limit : {0, 1, 2, 3}) {
            std::size_t broken = 0;
            std::string first;
            std::vector<event> events(length);
            for (std::size_t n = 0; n < sequences; ++n) {
                std::size_t digits = n;
                for (auto& e : events) {
                    e = static_cast<event>(digits % event_kinds);
                    digits /= event_kinds;
                }
                if (auto problem = replay(limit, events); !problem.empty()) {
                    if (broken++ == 0) first = problem + " after: " + spelled(events);
                }
            }
            CAPTURE(limit);
            CAPTURE(first);
            CHECK(broken == 0);
        }
    }

    TEST_CASE("a queued acquisition gives its place to the next once cancelled, not before") {
        admission_queue<int> queue{1};
        int a = 1;
        int b = 2;
        int c = 3;
        CHECK(queue.arrive(1, false, a) == admission::start_counted);
        CHECK(queue.arrive(2, false, b) == admission::wait);
        CHECK(queue.arrive(3, false, c) == admission::wait);
        CHECK(queue.take(2) == 2);
        CHECK_FALSE(queue.next());  // the place is still taken by the first
        queue.finished();
        CHECK(queue.next() == 3);
        CHECK(queue.running() == 1);
        CHECK(queue.held_back() == 0);
    }

    TEST_CASE("a negative limit is no limit") {
        admission_queue<int> queue{-1};
        int entry = 7;
        for (std::uint64_t t = 1; t < 100; ++t)
            CHECK(queue.arrive(t, false, entry) == admission::start);
        CHECK(queue.running() == 0);
    }
}
