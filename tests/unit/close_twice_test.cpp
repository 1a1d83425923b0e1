// Every handle owner's close() may be called twice (a shutdown path and a
// failure path can meet): libuv aborts the process on a second uv_close of one
// handle, and a lock library must never abort its host (issue 12, item 1).
// Each case fails on a second uv_close with libuv's assertion.

#include "detail/event_loop.hpp"
#include "detail/flush_hooks.hpp"
#include "detail/timer_queue.hpp"

#include <doctest/doctest.h>
#include <uv.h>

namespace {

struct loop_fixture {
    uv_loop_t loop{};
    loop_fixture() { REQUIRE(uv_loop_init(&loop) == 0); }
    loop_fixture(const loop_fixture&) = delete;
    auto operator=(const loop_fixture&) -> loop_fixture& = delete;
    ~loop_fixture() {
        uv_run(&loop, UV_RUN_DEFAULT);
        CHECK(uv_loop_close(&loop) == 0);  // nothing left open
    }
};

}  // namespace

TEST_CASE("timer_queue::close twice closes its handle once and calls both callbacks") {
    loop_fixture f;
    redlock::detail::timer_queue timers{&f.loop};
    int calls = 0;
    timers.close([&] { ++calls; });
    timers.close([&] { ++calls; });
    uv_run(&f.loop, UV_RUN_DEFAULT);
    CHECK(calls == 2);
    timers.close([&] { ++calls; });  // after it closed: at once
    CHECK(calls == 3);
}

TEST_CASE("flush_hooks::close twice closes its handles once and calls both callbacks") {
    loop_fixture f;
    redlock::detail::flush_hooks hooks{&f.loop};
    int calls = 0;
    hooks.close([&] { ++calls; });
    hooks.close([&] { ++calls; });
    uv_run(&f.loop, UV_RUN_DEFAULT);
    CHECK(calls == 2);
    hooks.close([&] { ++calls; });
    CHECK(calls == 3);
}

TEST_CASE("event_loop::close twice closes its wake-up handle once and calls both callbacks") {
    loop_fixture f;
    redlock::detail::event_loop loop{&f.loop};
    int calls = 0;
    loop.close([&] { ++calls; });
    loop.close([&] { ++calls; });
    uv_run(&f.loop, UV_RUN_DEFAULT);
    CHECK(calls == 2);
    loop.close([&] { ++calls; });
    CHECK(calls == 3);
}
