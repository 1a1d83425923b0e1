// Every handle owner's close() may be called twice (a shutdown path and a
// failure path can meet): libuv aborts the process on a second uv_close of one
// handle, and a lock library must never abort its host (issue 12, item 1).
// Each case fails on a second uv_close with libuv's assertion.

#include "transport/event_loop.hpp"
#include "transport/timer_queue.hpp"
#include "transport/write_batcher.hpp"

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

TEST_CASE_TEMPLATE(
    "close() twice closes the handles once and calls both callbacks, and one "
    "after the close at once",
    owner, redlock::detail::timer_queue, redlock::detail::write_batcher,
    redlock::detail::event_loop) {
    loop_fixture f;
    owner handles{&f.loop};
    int calls = 0;
    handles.close([&] { ++calls; });
    handles.close([&] { ++calls; });  // the old code: uv_close's assertion, SIGABRT
    uv_run(&f.loop, UV_RUN_DEFAULT);
    CHECK(calls == 2);
    handles.close([&] { ++calls; });
    CHECK(calls == 3);
}
