// Reply handling in the connection layer: whatever bytes a node sends are given to
// detail::node_connection::feed(), the connection's read path, while requests are pending
// as the operations leave them (SET, EVALSHA, EVAL, GET).
//
// Input: byte 0 chooses the mode, byte 1 where to split the rest in two.
//  - bit 0 clear: the connection is never started; the requests wait in its queue and the
//    whole input answers them.
//  - bit 0 set: the connection is made (to a Unix socket this process listens on), so the
//    handshake is pending in front of the requests: AUTH (bit 1), SCRIPT EXISTS, INFO
//    server persistence, and then, as those answers ask, SCRIPT LOAD of the missing
//    scripts, plain INFO and CONFIG GET appendfsync. The first part answers them; if it
//    broke the connection, the target waits for the reconnection (a second handshake,
//    where a new run_id is a restart) before feeding the second part.
//  - bit 2: requests expire after 1 ms, and the target lets them expire between the two
//    parts, so that the second part answers slots that timed out.
//  - bit 3: a subscriber connection (subscribe() before start(): the handshake is SUBSCRIBE,
//    and pushed ["message", channel, payload] arrays take no slot in the queue).
//
// Found by this target: an array header such as "*2147483647\r\n" made hiredis 0.14's reader
// calloc 8 bytes per announced element (16 GiB). detail::reply_reader now refuses a reply
// announcing more than 65536 elements; the input is kept as the seed huge-array-header.
//
// Checked, beyond ASan and UBSan: every request completes exactly once, with a reply
// exactly when its status is `reply`; close() completes; the loop ends with no handle open.

#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "sansio/scripts.hpp"
#include "transport/node_connection.hpp"
#include "transport/os_random.hpp"
#include "transport/write_batcher.hpp"

#include <uv.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace redlock::detail;
using namespace std::chrono_literals;

/// Reads a reply the way the operations and the handshake do.
void inspect(const reply* r) {
    (void)describe_reply(r);
    (void)reply_text(r);
    (void)integer_of(r);
    (void)is_nil(r);
    (void)is_status_ok(r);
    (void)is_noscript(r);
    (void)is_loading(r);
    (void)array_integer(r, 0);
    (void)array_integer(r, 1);
    (void)element_of(r, 0);
    for (const reply* e : r->elements) {
        if (e == nullptr) __builtin_trap();
        inspect(e);
    }
}

class recorder final : public reply_sink {
public:
    explicit recorder(std::size_t requests) : completions_(requests, 0) {}

    void on_reply(std::uint32_t tag, const reply_event& event) noexcept override {
        if (tag >= completions_.size()) __builtin_trap();
        ++completions_[tag];
        if ((event.status == request_status::reply) != (event.answer != nullptr)) __builtin_trap();
        if (event.answer != nullptr) {
            inspect(event.answer);
        } else if (event.cause.empty()) {
            __builtin_trap();  // a failure always says why
        }
    }

    [[nodiscard]] auto each_completed_once() const -> bool {
        for (const int c : completions_) {
            if (c != 1) return false;
        }
        return true;
    }

private:
    std::vector<int> completions_;
};

/// A Unix socket this process listens on, for the connected mode. Connections to it are
/// accepted (so that the backlog never fills) and closed once the input is done.
class listener {
public:
    listener() {
        path_ = "/tmp/redlock-fuzz-reply-" + std::to_string(::getpid()) + ".sock";
        ::unlink(path_.c_str());
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        path_.copy(address.sun_path, sizeof address.sun_path - 1);
        if (fd_ < 0 ||
            ::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(fd_, 64) != 0) {
            std::abort();
        }
    }
    listener(const listener&) = delete;
    auto operator=(const listener&) -> listener& = delete;
    ~listener() {
        ::close(fd_);
        ::unlink(path_.c_str());
    }

    [[nodiscard]] auto path() const -> const std::string& { return path_; }

    /// Accepts whatever connected, and keeps it open until close_accepted().
    void accept_pending() {
        for (;;) {
            const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) return;
            accepted_.push_back(fd);
        }
    }
    void close_accepted() {
        for (const int fd : accepted_) ::close(fd);
        accepted_.clear();
    }

private:
    std::string path_;
    int fd_ = -1;
    std::vector<int> accepted_;
};

auto the_listener() -> listener& {
    static listener l;
    return l;
}

/// Connected at the transport: the handshake is written and waits for its answer (which
/// the input gives), or was answered. connected() means the latter only.
auto transport_up(const node_connection& connection) -> bool {
    using state = redlock::detail::connection_fsm::state;
    return connection.state() == state::handshaking || connection.state() == state::ready;
}

/// Runs the loop until the connection is up, for a bounded number of turns.
auto run_until_connected(uv_loop_t* loop, node_connection& connection) -> bool {
    for (int turn = 0; turn < 200 && !transport_up(connection); ++turn) {
        uv_run(loop, UV_RUN_ONCE);
        the_listener().accept_pending();
    }
    return transport_up(connection);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::uint8_t mode = data[0];
    const bool connect = (mode & 1) != 0;
    const bool expire = (mode & 4) != 0;
    const bool subscriber = (mode & 8) != 0;
    const std::string_view rest{reinterpret_cast<const char*>(data) + 2, size - 2};
    const std::size_t split = rest.size() * data[1] / 255;

    redlock::client_config config;
    config.nodes = {
        redlock::node_address{.host = {}, .port = 0, .unix_path = the_listener().path()}};
    config.connect_timeout = 10s;
    config.request_timeout = expire ? 1ms : 10s;
    config.reconnect = {.min_delay = 1ms, .max_delay = 1ms};
    config.logger = [](redlock::log_level, std::string_view) {};
    if ((mode & 2) != 0) config.password = redlock::secret{"fuzz-secret"};

    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0) std::abort();
    random_source rng;
    connection_counters counters;
    recorder sink{4};
    {
        redlock::detail::write_batcher batcher{&loop};
        auto connection = std::make_unique<node_connection>(&loop, batcher, config.nodes[0], config,
                                                            rng, counters);
        std::size_t messages = 0;
        if (subscriber) {
            connection->subscribe("redlock:wake:fuzz", [&messages](std::string_view payload) {
                (void)std::string{payload};
                ++messages;
            });
        }
        const std::string_view value = "0123456789abcdef0123456789abcdef";
        const std::string_view key = "redlock:{orders:42}";
        const std::string_view set[] = {"SET", key, value, "NX", "PX", "10000"};
        const std::string_view evalsha[] = {"EVALSHA", release_script().sha, "1", key, value};
        const std::string_view eval[] = {
            "EVAL", acquire_script().source, "2", key, "redlock-fence:{orders:42}", value, "10000",
            "1"};
        const std::string_view get[] = {"GET", key};
        connection->send(set, &sink, 0);
        connection->send(evalsha, &sink, 1);
        connection->send(eval, &sink, 2);
        connection->send(get, &sink, 3);

        if (!connect) {
            connection->feed(rest.data(), rest.size());
        } else if (connection->start(); run_until_connected(&loop, *connection)) {
            connection->feed(rest.data(), split);
            if (expire) {
                std::this_thread::sleep_for(2ms);
                uv_run(&loop, UV_RUN_NOWAIT);
            }
            if (run_until_connected(&loop, *connection)) {
                connection->feed(rest.data() + split, rest.size() - split);
            }
        }

        bool closed = false;
        connection->close([&closed] { closed = true; });
        uv_run(&loop, UV_RUN_DEFAULT);
        if (!closed) __builtin_trap();
        connection.reset();
        batcher.close(nullptr);
        uv_run(&loop, UV_RUN_DEFAULT);
        if (!sink.each_completed_once()) __builtin_trap();
        if (counters.connected.load() != 0) __builtin_trap();
        if (!subscriber && messages != 0) __builtin_trap();
    }
    the_listener().close_accepted();
    if (uv_loop_close(&loop) != 0) __builtin_trap();  // a handle left open
    return 0;
}
