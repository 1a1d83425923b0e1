// uv_handle, uv_request and run_later on a real libuv loop, without sockets.
// A handle here carries a probe that counts its own destruction, so each case
// sees exactly when the memory is freed: never before libuv's close callback,
// exactly once, whatever the owner does (closes twice, dies first, never
// closes). Every sequence of up to 6 owner operations is enumerated.

#include "transport/uv_handle.hpp"

#include <doctest/doctest.h>
#include <uv.h>

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

namespace {

using redlock::detail::uv_handle;
using redlock::detail::uv_request;

int probes_alive = 0;  // handles allocated and not yet freed

struct probe {
    probe() noexcept { ++probes_alive; }
    probe(const probe&) = delete;
    auto operator=(const probe&) -> probe& = delete;
    ~probe() { --probes_alive; }
};

/// A timer whose memory reports its own end.
struct probed_timer {
    uv_timer_t timer;
    probe alive;
};

struct loop_fixture {
    uv_loop_t loop{};
    loop_fixture() {
        probes_alive = 0;
        REQUIRE(uv_loop_init(&loop) == 0);
    }
    loop_fixture(const loop_fixture&) = delete;
    auto operator=(const loop_fixture&) -> loop_fixture& = delete;
    ~loop_fixture() {
        uv_run(&loop, UV_RUN_DEFAULT);
        CHECK(uv_loop_close(&loop) == 0);  // nothing left open
        CHECK(probes_alive == 0);          // nothing left allocated
    }
};

struct owner {
    explicit owner(uv_loop_t* l) : loop{l} {}
    auto open() -> int {
        return timer.open([this](probed_timer* t) { return uv_timer_init(loop, &t->timer); });
    }
    auto close() -> bool {
        return timer.close([](owner& self) {
            ++self.closed_calls;
            self.alive_at_close_callback = probes_alive;
        });
    }

    uv_loop_t* loop;
    uv_handle<probed_timer, owner> timer{*this};
    int closed_calls = 0;
    int alive_at_close_callback = -1;
    int fired = 0;
};
using timer_handle = uv_handle<probed_timer, owner>;

}  // namespace

TEST_SUITE("uv_handle") {
    TEST_CASE("close() closes once and frees the handle only in libuv's close callback") {
        loop_fixture f;
        owner o{&f.loop};
        REQUIRE(o.open() == 0);
        CHECK(o.timer.is_open());
        CHECK(probes_alive == 1);
        CHECK(o.close());
        CHECK(o.timer.is_closing());
        CHECK(o.timer.get() == nullptr);  // not to be used while closing
        CHECK(probes_alive == 1);         // libuv still holds it
        uv_run(&f.loop, UV_RUN_DEFAULT);
        CHECK(probes_alive == 0);
        CHECK(o.closed_calls == 1);
        CHECK(o.alive_at_close_callback == 0);  // freed before the owner hears of it
        CHECK_FALSE(o.timer.is_open());
        CHECK_FALSE(o.timer.is_closing());
    }

    TEST_CASE("a second close() does nothing, while closing or after") {
        loop_fixture f;
        owner o{&f.loop};
        REQUIRE(o.open() == 0);
        CHECK(o.close());
        CHECK_FALSE(o.close());  // the old code's second uv_close: libuv's assertion, SIGABRT
        uv_run(&f.loop, UV_RUN_DEFAULT);
        CHECK_FALSE(o.close());
        uv_run(&f.loop, UV_RUN_DEFAULT);
        CHECK(o.closed_calls == 1);
    }

    TEST_CASE(
        "an owner that dies before the close callback is not called back, and the handle is "
        "freed") {
        loop_fixture f;
        // The owner lives in memory of our own, so that a write to it after its
        // death shows (a freed owner's memory would only show under valgrind).
        alignas(owner) std::array<unsigned char, sizeof(owner)> memory{};
        auto* o = new (memory.data()) owner{&f.loop};
        REQUIRE(o->open() == 0);
        CHECK(o->close());
        o->~owner();
        memory.fill(0xab);
        CHECK(probes_alive == 1);
        uv_run(&f.loop, UV_RUN_DEFAULT);
        CHECK(probes_alive == 0);
        CHECK(std::all_of(memory.begin(), memory.end(), [](unsigned char b) { return b == 0xab; }));
    }

    TEST_CASE("an owner that dies with its handle open has it closed, and freed after") {
        loop_fixture f;
        auto o = std::make_unique<owner>(&f.loop);
        REQUIRE(o->open() == 0);
        o.reset();
        CHECK(probes_alive == 1);
        uv_run(&f.loop, UV_RUN_DEFAULT);
        CHECK(probes_alive == 0);
    }

    TEST_CASE("owner_of finds the owner inside the handle's callbacks") {
        loop_fixture f;
        owner o{&f.loop};
        REQUIRE(o.open() == 0);
        uv_timer_start(
            &o.timer.get()->timer,
            [](uv_timer_t* t) {
                owner& self = timer_handle::owner_of(t);
                ++self.fired;
                self.close();
            },
            0, 0);
        uv_run(&f.loop, UV_RUN_DEFAULT);
        CHECK(o.fired == 1);
        CHECK(o.closed_calls == 1);
    }

    TEST_CASE("a handle can be opened again from its close callback (a stream's reconnect)") {
        loop_fixture f;
        owner o{&f.loop};
        REQUIRE(o.open() == 0);
        CHECK(o.open() == UV_EBUSY);  // open
        CHECK(o.timer.close([](owner& self) { CHECK(self.open() == 0); }));
        CHECK(o.open() == UV_EBUSY);  // closing
        uv_run(&f.loop, UV_RUN_DEFAULT);
        CHECK(o.timer.is_open());
        CHECK(probes_alive == 1);
        CHECK(o.close());
    }

    TEST_CASE("a failed init leaves nothing allocated and nothing to close") {
        loop_fixture f;
        owner o{&f.loop};
        CHECK(o.timer.open([](probed_timer*) { return UV_EINVAL; }) == UV_EINVAL);
        CHECK(probes_alive == 0);
        CHECK_FALSE(o.timer.is_open());
        CHECK_FALSE(o.close());
    }

    // The owner's operations in every order, up to 6 of them: open, close, one loop turn,
    // the owner's death. Whatever the order, each close callback reaches a living owner
    // exactly once per close that started, and every handle is freed exactly once.
    TEST_CASE("every sequence of owner operations frees each handle once, after its close") {
        enum op { open_it, close_it, turn, die, count };
        long sequences = 0;
        for (int length = 0; length <= 6; ++length) {
            int combinations = 1;
            for (int i = 0; i < length; ++i) combinations *= count;
            for (int code = 0; code < combinations; ++code) {
                std::vector<int> ops;
                for (int i = 0, c = code; i < length; ++i, c /= count) ops.push_back(c % count);
                CAPTURE(code);
                CAPTURE(length);
                loop_fixture f;
                auto o = std::make_unique<owner>(&f.loop);
                // The model: none, open or closing; the callbacks owed.
                enum { none, open, closing } state = none;
                int expected_calls = 0;
                int callbacks_owed = 0;
                int calls_seen = 0;
                for (const int step : ops) {
                    if (step == open_it && o) {
                        CHECK(o->open() == (state == none ? 0 : UV_EBUSY));
                        if (state == none) state = open;
                    } else if (step == close_it && o) {
                        CHECK(o->close() == (state == open));
                        if (state == open) {
                            state = closing;
                            ++callbacks_owed;
                        }
                    } else if (step == turn) {
                        uv_run(&f.loop, UV_RUN_NOWAIT);
                        if (state == closing) state = none;
                        expected_calls += o ? callbacks_owed : 0;
                        callbacks_owed = 0;
                    } else if (step == die && o) {
                        calls_seen = o->closed_calls;
                        o.reset();
                        callbacks_owed = 0;
                    }
                    if (o) calls_seen = o->closed_calls;
                    CHECK(calls_seen == expected_calls);
                    CHECK(probes_alive <= 1);
                }
                if (o) {
                    o->close();
                    uv_run(&f.loop, UV_RUN_DEFAULT);
                    CHECK(o->closed_calls == expected_calls + callbacks_owed + (state == open));
                }
                ++sequences;
            }  // the fixture: the loop closes with nothing open, nothing allocated
        }
        CHECK(sequences == 1 + 4 + 16 + 64 + 256 + 1024 + 4096);
    }
}

TEST_SUITE("uv_request") {
    TEST_CASE("owner_of finds the owner of a request in its callback") {
        loop_fixture f;
        struct worker {
            uv_request<uv_work_t, worker> work{*this};
            int done = 0;
        } w;
        REQUIRE(uv_queue_work(
                    &f.loop, w.work.get(), [](uv_work_t*) {},
                    [](uv_work_t* req, int status) {
                        CHECK(status == 0);
                        ++uv_request<uv_work_t, worker>::owner_of(req).done;
                    }) == 0);
        uv_run(&f.loop, UV_RUN_DEFAULT);
        CHECK(w.done == 1);
    }
}

TEST_SUITE("run_later") {
    TEST_CASE("runs once on a later turn, never inside the call, and leaves nothing open") {
        loop_fixture f;
        int runs = 0;
        std::function<void()> fn = [&runs] { ++runs; };
        REQUIRE(redlock::detail::run_later(&f.loop, fn));
        CHECK(runs == 0);
        CHECK_FALSE(fn);  // taken
        uv_run(&f.loop, UV_RUN_DEFAULT);
        CHECK(runs == 1);
    }

    TEST_CASE("a function that throws is contained, and the timer still freed") {
        loop_fixture f;
        std::function<void()> fn = [] { throw std::runtime_error{"from a completion"}; };
        REQUIRE(redlock::detail::run_later(&f.loop, fn));
        uv_run(&f.loop, UV_RUN_DEFAULT);
    }
}
