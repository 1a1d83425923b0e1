// What a node may send back, fed straight to node_connection's read path (feed(), as the
// fuzz target fuzz/fuzz_reply does) while requests are pending. No network: the connection
// is never started, so requests wait in its queue for the bytes fed here.
//

#include "transport/node_connection.hpp"
#include "transport/os_random.hpp"
#include "transport/write_batcher.hpp"

#include <doctest/doctest.h>
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace std::chrono_literals;
using redlock::detail::request_status;

namespace {

/// One node_connection on a private loop, never connected, with `requests` GETs queued.
class queued_requests : private redlock::detail::reply_sink {
public:
    struct outcome {
        request_status status;
        std::string cause;
        std::optional<std::string> text;  ///< the reply's string, status or error text
    };

    explicit queued_requests(std::size_t requests) : outcomes_(requests) {
        config_.nodes = {redlock::node_address{.host = "127.0.0.1", .port = 1, .unix_path = {}}};
        config_.request_timeout = 10s;
        config_.logger = [](redlock::log_level, std::string_view) {};
        REQUIRE(uv_loop_init(&loop_) == 0);
        batcher_ = std::make_unique<redlock::detail::write_batcher>(&loop_);
        connection_ = std::make_unique<redlock::detail::node_connection>(
            &loop_, *batcher_, config_.nodes[0], config_, rng_, counters_);
        for (std::size_t i = 0; i < requests; ++i) send_get(i);
    }
    queued_requests(const queued_requests&) = delete;
    auto operator=(const queued_requests&) -> queued_requests& = delete;
    ~queued_requests() override {
        finish();
        (void)uv_loop_close(&loop_);
    }

    void feed(std::string_view bytes) { connection_->feed(bytes.data(), bytes.size()); }

    /// Queues one more request; its outcome comes last.
    void queue_another() {
        outcomes_.emplace_back();
        send_get(outcomes_.size() - 1);
    }

    /// Closes the connection (what is still pending fails as `stopped`) and runs the loop
    /// until every handle is closed; then the outcomes are final.
    auto finish() -> const std::vector<std::optional<outcome>>& {
        if (connection_) {
            bool closed = false;
            connection_->close([&closed] { closed = true; });
            uv_run(&loop_, UV_RUN_DEFAULT);
            CHECK(closed);
            connection_.reset();
            batcher_->close(nullptr);
            uv_run(&loop_, UV_RUN_DEFAULT);
        }
        return outcomes_;
    }

private:
    void send_get(std::size_t tag) {
        const std::string_view get[] = {"GET", "redlock:orders:42"};
        connection_->send(get, this, static_cast<std::uint32_t>(tag));
    }

    void on_reply(std::uint32_t tag, const redlock::detail::reply_event& event) noexcept override {
        auto& slot = outcomes_.at(tag);
        CHECK_FALSE(slot.has_value());  // exactly once
        slot = outcome{event.status, std::string{event.cause}, std::nullopt};
        if (event.answer != nullptr && event.answer->kind != redlock::detail::reply_kind::array &&
            event.answer->kind != redlock::detail::reply_kind::integer &&
            event.answer->kind != redlock::detail::reply_kind::nil)
            slot->text = std::string{event.answer->text};
    }

    redlock::client_config config_;
    uv_loop_t loop_{};
    redlock::detail::random_source rng_;
    redlock::detail::connection_counters counters_;
    std::unique_ptr<redlock::detail::write_batcher> batcher_;
    std::unique_ptr<redlock::detail::node_connection> connection_;
    std::vector<std::optional<outcome>> outcomes_;
};

}  // namespace

TEST_SUITE("node_connection replies") {
    TEST_CASE("replies fed in pieces answer the queued requests in order") {
        queued_requests node{2};

        node.feed("$5\r\nfir");
        node.feed("st\r\n+sec");
        node.feed("ond\r\n");

        const auto& outcomes = node.finish();
        REQUIRE(outcomes[0]);
        CHECK(outcomes[0]->status == request_status::reply);
        CHECK(outcomes[0]->text == "first");
        REQUIRE(outcomes[1]);
        CHECK(outcomes[1]->status == request_status::reply);
        CHECK(outcomes[1]->text == "second");
    }

    TEST_CASE("bytes that are not RESP fail the pending requests as a protocol error") {
        queued_requests node{2};

        node.feed(std::string_view{"\x00garbage\r\n", 10});

        const auto& outcomes = node.finish();
        for (const auto& o : outcomes) {
            REQUIRE(o);
            CHECK(o->status == request_status::unreachable);
            CHECK_MESSAGE(o->cause.find("protocol error") != std::string::npos, o->cause);
        }
    }

    TEST_CASE("a reply nobody asked for drops the connection, and says so to what comes next") {
        queued_requests node{1};

        node.feed("+OK\r\n+OK\r\n");
        node.queue_another();

        const auto& outcomes = node.finish();
        REQUIRE(outcomes[0]);
        CHECK(outcomes[0]->status == request_status::reply);
        CHECK(outcomes[0]->text == "OK");
        REQUIRE(outcomes[1]);
        CHECK(outcomes[1]->status == request_status::unreachable);
        CHECK_MESSAGE(outcomes[1]->cause.find("a reply nobody asked for") != std::string::npos,
                      outcomes[1]->cause);
    }

    // Found by fuzz/fuzz_reply (libFuzzer: "out-of-memory (malloc(17179869176))" on the 13
    // bytes "*2147483647\r\n"): hiredis 0.14's reader callocs the element table as soon as it
    // reads an array header, so one header made the client allocate 8 bytes per announced
    // element. reply_reader now refuses a reply announcing more than 65536 elements before
    // the allocation. 16 Mi elements (128 MiB) stands for any absurd count.
    TEST_CASE(
        "an array header announcing 16 million elements is refused at once as a protocol "
        "error") {
        queued_requests node{1};

        node.feed("*16777216\r\n");

        const auto& outcomes = node.finish();
        REQUIRE(outcomes[0]);
        CHECK(outcomes[0]->status == request_status::unreachable);
        CHECK_MESSAGE(outcomes[0]->cause.find("protocol error") != std::string::npos,
                      outcomes[0]->cause);
    }

    // Nested headers multiply: two arrays of 40 000 announce 80 000 slots in one reply.
    TEST_CASE("nested array headers that together announce more than 65536 elements are refused") {
        queued_requests node{1};

        node.feed("*2\r\n*40000\r\n");
        for (int i = 0; i < 40000; ++i) node.feed(":1\r\n");
        node.feed("*40000\r\n");

        const auto& outcomes = node.finish();
        REQUIRE(outcomes[0]);
        CHECK(outcomes[0]->status == request_status::unreachable);
        CHECK_MESSAGE(
            outcomes[0]->cause.find("more than 65536 array elements") != std::string::npos,
            outcomes[0]->cause);
    }

    // The limit is per reply: a budget that did not start afresh would refuse the second.
    TEST_CASE("two replies of 40000 elements each are both accepted") {
        queued_requests node{2};
        std::string reply = "*40000\r\n";
        for (int i = 0; i < 40000; ++i) reply += ":1\r\n";

        node.feed(reply);
        node.feed(reply);

        const auto& outcomes = node.finish();
        REQUIRE(outcomes[0]);
        CHECK(outcomes[0]->status == request_status::reply);
        REQUIRE(outcomes[1]);
        CHECK_MESSAGE(outcomes[1]->status == request_status::reply, outcomes[1]->cause);
    }

    // A node must not make the client buffer without bound: hiredis 0.14's reader has no
    // limit of its own, so node_connection::feed() cuts a reply that has buffered 16 MiB.
    // (Found by tests/integration/hostile_test.cpp before the cap existed: a node streaming
    // an endless bulk string made the client buffer about 1 GB in the 2 s before the stale
    // reply timer dropped the connection.)
    TEST_CASE("a bulk reply still unfinished after 64 MiB is refused as a protocol error") {
        queued_requests node{1};
        const std::string chunk(1 << 20, 'x');

        node.feed("$1000000000\r\n");
        for (int i = 0; i < 64; ++i) node.feed(chunk);

        const auto& outcomes = node.finish();
        REQUIRE(outcomes[0]);
        CHECK_MESSAGE(outcomes[0]->status == request_status::unreachable,
                      "still waiting for the rest of the reply: " << outcomes[0]->cause);
        CHECK_MESSAGE(outcomes[0]->cause.find("protocol error") != std::string::npos,
                      outcomes[0]->cause);
    }
}
