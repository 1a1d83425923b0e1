#include "support/fault_proxy.hpp"

#include <uv.h>

#include <arpa/inet.h>
#include <atomic>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <pthread.h>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace redlock_test {
namespace {

constexpr std::size_t read_buffer_size = 64 * 1024;
constexpr std::uint64_t ns_per_ms = 1'000'000;

auto as_handle(void* h) noexcept -> uv_handle_t* {
    return static_cast<uv_handle_t*>(h);
}

auto check(int rc, const char* what) -> void {
    if (rc != 0)
        throw std::runtime_error(std::string{"fault_proxy: "} + what + ": " + uv_strerror(rc));
}

}  // namespace

struct fault_proxy::impl {
    struct session;

    /// One chunk read from one side, to be written to the other side at `due_ns`.
    struct chunk {
        std::uint64_t due_ns = 0;
        std::string data;
    };

    /// One direction of one connection.
    struct direction {
        uv_tcp_t* from = nullptr;
        uv_tcp_t* to = nullptr;
        std::deque<chunk> queue;
        std::atomic<std::uint64_t>* bytes = nullptr;
        bool eof = false;   // `from` is gone: deliver what it sent before, then close
        bool dead = false;  // `to` is gone: nothing more can be delivered to it
        int writing = 0;    // writes in flight to `to`
    };

    /// A write in flight: libuv needs the request and the bytes until its callback.
    struct write_request {
        uv_write_t req{};
        std::string data;
        session* owner = nullptr;
        direction* dir = nullptr;
    };

    struct session {
        impl* owner = nullptr;
        uv_tcp_t client{};
        uv_tcp_t upstream{};
        uv_timer_t timer{};
        uv_connect_t connect_req{};
        direction up;    // client -> target
        direction down;  // target -> client
        bool upstream_connected = false;
        bool closing = false;
        int open_handles = 0;
    };

    explicit impl(std::uint16_t target, const std::string& host) : target_port{target} {
        check(uv_ip4_addr(host.c_str(), target, &target_address), "target address");
        check(uv_loop_init(&loop), "uv_loop_init");
        check(uv_tcp_init(&loop, &listener), "uv_tcp_init");
        listener.data = this;
        sockaddr_in any{};
        check(uv_ip4_addr("127.0.0.1", 0, &any), "listen address");
        int rc = uv_tcp_bind(&listener, reinterpret_cast<const sockaddr*>(&any), 0);
        if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener), 128, &on_connection);
        if (rc != 0) {
            uv_close(as_handle(&listener), nullptr);
            uv_run(&loop, UV_RUN_DEFAULT);
            uv_loop_close(&loop);
            check(rc, "listen");
        }
        sockaddr_storage bound{};
        int length = sizeof bound;
        uv_tcp_getsockname(&listener, reinterpret_cast<sockaddr*>(&bound), &length);
        port = ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
        uv_async_init(&loop, &wake, &on_wake);
        wake.data = this;
        thread = std::thread{[this] {
            // A write to a peer that has gone raises SIGPIPE in the writing thread:
            // blocked here, it fails with EPIPE instead of killing the test process.
            sigset_t pipe;
            sigemptyset(&pipe);
            sigaddset(&pipe, SIGPIPE);
            pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
            uv_run(&loop, UV_RUN_DEFAULT);
        }};
    }

    impl(const impl&) = delete;
    auto operator=(const impl&) -> impl& = delete;

    ~impl() {
        run_on_loop([this] {
            stopping = true;
            const std::set<session*> open = sessions;
            for (session* s : open) close_session(*s, false);
            uv_close(as_handle(&listener), nullptr);
            uv_close(as_handle(&wake), nullptr);
        });
        thread.join();
        uv_loop_close(&loop);
    }

    /// Runs `task` on the loop thread and waits for it.
    void run_on_loop(std::function<void()> task) {
        std::promise<void> done;
        auto finished = done.get_future();
        {
            std::lock_guard held{mutex};
            tasks.emplace_back([&task, &done] {
                task();
                done.set_value();
            });
        }
        uv_async_send(&wake);
        finished.get();
    }

    static void on_wake(uv_async_t* handle) {
        auto& self = *static_cast<impl*>(handle->data);
        std::deque<std::function<void()>> batch;
        {
            std::lock_guard held{self.mutex};
            batch.swap(self.tasks);
        }
        for (auto& task : batch) task();
    }

    // ---- connections ------------------------------------------------------------------------

    static void on_connection(uv_stream_t* server, int status) {
        auto& self = *static_cast<impl*>(server->data);
        if (status != 0 || self.stopping) return;
        auto* s = new session{};
        s->owner = &self;
        uv_tcp_init(&self.loop, &s->client);
        uv_tcp_init(&self.loop, &s->upstream);
        uv_timer_init(&self.loop, &s->timer);
        s->client.data = s;
        s->upstream.data = s;
        s->timer.data = s;
        s->open_handles = 3;
        s->up = direction{&s->client, &s->upstream, {}, &self.bytes_to_target};
        s->down = direction{&s->upstream, &s->client, {}, &self.bytes_to_clients};
        self.sessions.insert(s);
        if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&s->client)) != 0) {
            self.close_session(*s, false);
            return;
        }
        self.accepted.fetch_add(1, std::memory_order_relaxed);
        uv_tcp_nodelay(&s->client, 1);
        uv_tcp_nodelay(&s->upstream, 1);
        s->connect_req.data = s;
        if (uv_tcp_connect(&s->connect_req, &s->upstream,
                           reinterpret_cast<const sockaddr*>(&self.target_address),
                           &on_upstream_connected) != 0) {
            self.close_session(*s, false);
            return;
        }
        self.update_reading(*s);
    }

    static void on_upstream_connected(uv_connect_t* req, int status) {
        auto& s = *static_cast<session*>(req->data);
        if (s.closing) return;
        if (status != 0) {
            s.owner->close_session(s, false);  // nothing listens there: the client sees EOF
            return;
        }
        s.upstream_connected = true;
        s.owner->update_reading(s);
        s.owner->flush(s);
    }

    /// Reads run on both sides unless blackholed (upstream only once connected).
    void update_reading(session& s) {
        if (s.closing) return;
        const bool on = !black;
        auto* client = reinterpret_cast<uv_stream_t*>(&s.client);
        auto* upstream = reinterpret_cast<uv_stream_t*>(&s.upstream);
        if (on) {
            if (!s.up.eof) uv_read_start(client, &on_alloc, &on_read);
            if (s.upstream_connected && !s.down.eof) uv_read_start(upstream, &on_alloc, &on_read);
        } else {
            uv_read_stop(client);
            if (s.upstream_connected) uv_read_stop(upstream);
        }
    }

    static void on_alloc(uv_handle_t*, std::size_t, uv_buf_t* buf) {
        // One buffer per read; a copy of what was read goes into the chunk queue.
        thread_local std::vector<char> storage(read_buffer_size);
        *buf = uv_buf_init(storage.data(), static_cast<unsigned>(storage.size()));
    }

    /// `d` can deliver nothing more (its destination is gone): drop what waits for it.
    void kill_direction(session& s, direction& d) {
        d.dead = true;
        d.queue.clear();
        uv_read_stop(reinterpret_cast<uv_stream_t*>(d.from));
        if (s.up.dead && s.down.dead && s.up.writing == 0 && s.down.writing == 0)
            close_session(s, false);
    }

    static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
        auto& s = *static_cast<session*>(stream->data);
        if (s.closing) return;
        direction& d = stream == reinterpret_cast<uv_stream_t*>(&s.client) ? s.up : s.down;
        if (nread < 0) {
            // The peer closed (FIN) or reset. What it sent before is in flight already:
            // as TCP would, deliver it (after the latency, once healed), then close both
            // sides. After a reset nothing can be delivered back to it any more.
            uv_read_stop(stream);
            d.eof = true;
            if (nread != UV_EOF) s.owner->kill_direction(s, &d == &s.up ? s.down : s.up);
            s.owner->flush(s);
            return;
        }
        if (nread == 0 || d.dead) return;
        const std::uint64_t delay = static_cast<std::uint64_t>(s.owner->latency_ms) * ns_per_ms;
        d.queue.push_back(
            chunk{uv_hrtime() + delay, std::string{buf->base, static_cast<std::size_t>(nread)}});
        s.owner->flush(s);
    }

    /// Writes every chunk that is due, in order, unless blackholed; re-arms the timer
    /// for the next one.
    void flush(session& s) {
        if (s.closing || black) return;
        const std::uint64_t now = uv_hrtime();
        std::uint64_t next = UINT64_MAX;
        for (direction* d : {&s.up, &s.down}) {
            if (d == &s.up && !s.upstream_connected) {
                if (!d->queue.empty()) next = std::min(next, d->queue.front().due_ns);
                continue;
            }
            while (!d->queue.empty() && d->queue.front().due_ns <= now) {
                auto* w = new write_request{};
                w->data = std::move(d->queue.front().data);
                d->queue.pop_front();
                w->req.data = w;
                w->owner = &s;
                w->dir = d;
                ++d->writing;
                d->bytes->fetch_add(w->data.size(), std::memory_order_relaxed);
                uv_buf_t out = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
                const int rc =
                    uv_write(&w->req, reinterpret_cast<uv_stream_t*>(d->to), &out, 1, &on_written);
                if (rc != 0) {
                    --d->writing;
                    delete w;
                    kill_direction(s, *d);
                    if (s.closing) return;
                    break;
                }
            }
            if (!d->queue.empty()) next = std::min(next, d->queue.front().due_ns);
        }
        if (drained(s)) {
            close_session(s, false);
            return;
        }
        if (next == UINT64_MAX || !s.upstream_connected) {
            uv_timer_stop(&s.timer);
            return;
        }
        // Rounded up: a chunk never leaves before its due time.
        const std::uint64_t wait_ms = (next - std::min(next, now) + ns_per_ms - 1) / ns_per_ms;
        uv_timer_start(
            &s.timer,
            [](uv_timer_t* t) {
                auto& ss = *static_cast<session*>(t->data);
                ss.owner->flush(ss);
            },
            std::max<std::uint64_t>(wait_ms, 1), 0);
    }

    /// A side has gone and everything it sent before has been written to the other (or
    /// cannot be), or nothing can be delivered either way.
    static auto drained(const session& s) -> bool {
        for (const direction* d : {&s.up, &s.down}) {
            if (d->eof && d->queue.empty() && d->writing == 0) return true;
        }
        return s.up.dead && s.down.dead && s.up.writing == 0 && s.down.writing == 0;
    }

    static void on_written(uv_write_t* req, int status) {
        auto* w = static_cast<write_request*>(req->data);
        session* s = w->owner;
        direction* w_dir = w->dir;
        --w_dir->writing;
        delete w;
        if (s->closing) return;
        if ((status != 0 && status != UV_ECANCELED) || drained(*s))
            s->owner->close_session(*s, false);
    }

    void close_session(session& s, bool reset) {
        if (s.closing) return;
        s.closing = true;
        sessions.erase(&s);
        s.up.queue.clear();
        s.down.queue.clear();
        auto closed = [](uv_handle_t* h) {
            auto* ss = static_cast<session*>(h->data);
            if (--ss->open_handles == 0) delete ss;
        };
        if (reset) {
            if (uv_tcp_close_reset(&s.client, closed) != 0) uv_close(as_handle(&s.client), closed);
            if (!s.upstream_connected || uv_tcp_close_reset(&s.upstream, closed) != 0)
                uv_close(as_handle(&s.upstream), closed);
        } else {
            uv_close(as_handle(&s.client), closed);
            uv_close(as_handle(&s.upstream), closed);
        }
        uv_close(as_handle(&s.timer), closed);
    }

    // ---- controls (loop thread) ---------------------------------------------------------

    void set_black(bool on) {
        if (black == on) return;
        black = on;
        for (session* s : sessions) {
            update_reading(*s);
            if (!on) flush(*s);
        }
        if (on) {
            for (session* s : sessions) uv_timer_stop(&s->timer);
        }
    }

    void drop_all(bool reset) {
        const std::set<session*> open = sessions;
        for (session* s : open) close_session(*s, reset);
        dropped.fetch_add(open.size(), std::memory_order_relaxed);
    }

    uv_loop_t loop{};
    uv_tcp_t listener{};
    uv_async_t wake{};
    std::thread thread;
    sockaddr_in target_address{};
    std::uint16_t target_port = 0;
    std::uint16_t port = 0;

    std::mutex mutex;
    std::deque<std::function<void()>> tasks;

    // Loop thread only.
    std::set<session*> sessions;
    bool stopping = false;
    bool black = false;
    std::int64_t latency_ms = 0;

    // Read by any thread.
    std::atomic<std::uint64_t> accepted{0};
    std::atomic<std::uint64_t> dropped{0};
    std::atomic<std::uint64_t> bytes_to_target{0};
    std::atomic<std::uint64_t> bytes_to_clients{0};
    std::atomic<std::int64_t> latency_seen{0};
    std::atomic<bool> black_seen{false};
    std::atomic<std::uint64_t> open_seen{0};
};

fault_proxy::fault_proxy(std::uint16_t target_port, std::string target_host)
    : impl_{std::make_unique<impl>(target_port, target_host)} {}

fault_proxy::fault_proxy(fault_proxy&&) noexcept = default;
auto fault_proxy::operator=(fault_proxy&&) noexcept -> fault_proxy& = default;
fault_proxy::~fault_proxy() = default;

auto fault_proxy::port() const noexcept -> std::uint16_t {
    return impl_->port;
}

auto fault_proxy::target_port() const noexcept -> std::uint16_t {
    return impl_->target_port;
}

auto fault_proxy::address() const -> redlock::node_address {
    return redlock::node_address{.host = "127.0.0.1", .port = port(), .unix_path = {}};
}

void fault_proxy::set_latency(std::chrono::milliseconds per_direction) {
    const std::int64_t value = std::max<std::int64_t>(per_direction.count(), 0);
    impl_->run_on_loop([this, value] {
        impl_->latency_ms = value;
        impl_->latency_seen.store(value);
    });
}

void fault_proxy::drop_connections(drop_mode mode) {
    impl_->run_on_loop([this, mode] { impl_->drop_all(mode == drop_mode::reset); });
}

void fault_proxy::blackhole() {
    impl_->run_on_loop([this] {
        impl_->set_black(true);
        impl_->black_seen.store(true);
    });
}

void fault_proxy::heal() {
    impl_->run_on_loop([this] {
        impl_->latency_ms = 0;
        impl_->latency_seen.store(0);
        impl_->set_black(false);
        impl_->black_seen.store(false);
    });
}

auto fault_proxy::latency() const -> std::chrono::milliseconds {
    return std::chrono::milliseconds{impl_->latency_seen.load()};
}

auto fault_proxy::blackholed() const -> bool {
    return impl_->black_seen.load();
}

auto fault_proxy::stats() const -> counters {
    counters c;
    c.accepted = impl_->accepted.load();
    c.dropped = impl_->dropped.load();
    c.bytes_to_target = impl_->bytes_to_target.load();
    c.bytes_to_clients = impl_->bytes_to_clients.load();
    impl_->run_on_loop([this] { impl_->open_seen.store(impl_->sessions.size()); });
    c.open = impl_->open_seen.load();
    return c;
}

}  // namespace redlock_test
