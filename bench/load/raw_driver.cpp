#include "load/raw_driver.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace redlock::bench {
namespace {

/// A blocking connection to one node, with a send/receive timeout.
auto open_socket(const node_address& address) -> int {
    int fd = -1;
    if (address.is_unix()) {
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strncpy(sa.sun_path, address.unix_path.c_str(), sizeof sa.sun_path - 1);
        fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
            ::close(fd);
            return -1;
        }
    } else {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        const std::string port = std::to_string(address.port);
        if (::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
        for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
            fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
            if (fd < 0) continue;
            const timeval tv{1, 0};
            ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
            ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
            ::close(fd);
            fd = -1;
        }
        ::freeaddrinfo(found);
        if (fd >= 0) {
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
    }
    return fd;
}

/// Sends one command and waits for its reply, on a blocking socket (AUTH).
auto exchange(int fd, std::initializer_list<std::string_view> argv) -> bool {
    std::vector<const char*> ptrs;
    std::vector<std::size_t> lens;
    for (const auto a : argv) {
        ptrs.push_back(a.data());
        lens.push_back(a.size());
    }
    char* cmd = nullptr;
    const int len =
        redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), ptrs.data(), lens.data());
    if (len < 0) return false;
    const bool sent = ::write(fd, cmd, static_cast<std::size_t>(len)) == len;
    std::free(cmd);  // NOLINT: hiredis 0.14 allocates with malloc
    if (!sent) return false;
    redisReader* reader = redisReaderCreate();
    void* reply = nullptr;
    char buf[512];
    while (reply == nullptr) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0 || redisReaderFeed(reader, buf, static_cast<std::size_t>(n)) != REDIS_OK ||
            redisReaderGetReply(reader, &reply) != REDIS_OK)
            break;
    }
    const bool ok = reply != nullptr && static_cast<redisReply*>(reply)->type != REDIS_REPLY_ERROR;
    if (reply != nullptr) freeReplyObject(reply);
    redisReaderFree(reader);
    return ok;
}

}  // namespace

// ---- fifo ---------------------------------------------------------------------------------

void raw_driver::fifo::push(pending p) {
    if (tail_ - head_ == ring_.size()) {
        std::vector<pending> bigger(ring_.size() * 2);
        for (std::size_t i = head_; i < tail_; ++i) bigger[i - head_] = ring_[i % ring_.size()];
        tail_ -= head_;
        head_ = 0;
        ring_.swap(bigger);
    }
    ring_[tail_++ % ring_.size()] = p;
}

auto raw_driver::fifo::pop() noexcept -> pending {
    return ring_[head_++ % ring_.size()];
}

// ---- set-up -------------------------------------------------------------------------------

auto raw_driver::create(const client_config& config, const workload& load)
    -> std::unique_ptr<raw_driver> {
    std::unique_ptr<raw_driver> d{new raw_driver{config, load}};
    if (!d->connect_all(config)) return nullptr;
    return d;
}

raw_driver::raw_driver(const client_config& config, const workload& load)
    : load_{load}, run_{config, load, static_cast<std::uint64_t>(::getpid()) << 32} {}

auto raw_driver::connect_all(const client_config& config) -> bool {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) return false;
    nodes_.resize(config.nodes.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        node& n = nodes_[i];
        n.fd = open_socket(config.nodes[i]);
        if (n.fd < 0) {
            std::fprintf(stderr, "redlock_load: raw: cannot connect to %s\n",
                         config.nodes[i].to_string().c_str());
            return false;
        }
        if (!config.password.empty()) {
            const bool ok =
                config.username.empty()
                    ? exchange(n.fd, {"AUTH", config.password.reveal()})
                    : exchange(n.fd, {"AUTH", config.username, config.password.reveal()});
            if (!ok) {
                std::fprintf(stderr, "redlock_load: raw: AUTH failed\n");
                return false;
            }
        }
        ::fcntl(n.fd, F_SETFL, ::fcntl(n.fd, F_GETFL) | O_NONBLOCK);
        n.reader = redisReaderCreate();
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = i;
        if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, n.fd, &ev) != 0) return false;
    }
    return true;
}

raw_driver::~raw_driver() {
    finish();
    for (auto& n : nodes_) {
        if (n.reader != nullptr) redisReaderFree(n.reader);
        if (n.fd >= 0) ::close(n.fd);
    }
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void raw_driver::start(phase_gate& gate, phase_stats& stats) {
    gate_ = &gate;
    stats_ = &stats;
    thread_ = std::thread{[this] { run(); }};
}

void raw_driver::finish() {
    if (thread_.joinable()) thread_.join();
}

// ---- the loop -----------------------------------------------------------------------------

void raw_driver::run() {
    active_ = static_cast<int>(run_.cycles.size());
    const auto now = steady::now();
    for (std::uint32_t i = 0; i < run_.cycles.size(); ++i) begin(i, now);
    for (auto& n : nodes_) broken_ = broken_ || !flush(n);

    epoll_event events[16];
    while (active_ > 0 && !broken_) {
        const int ready = ::epoll_wait(epoll_fd_, events, 16, 100);
        if (ready < 0 && errno != EINTR) break;
        for (int e = 0; e < ready && !broken_; ++e) {
            node& n = nodes_[events[e].data.u64];
            if ((events[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0 && !read_node(n)) {
                broken_ = true;
            } else if ((events[e].events & EPOLLOUT) != 0 && !flush(n)) {
                broken_ = true;
            }
        }
        for (auto& n : nodes_) {
            if (n.dirty && !broken_) broken_ = !flush(n);
        }
        // Bounded even if a node stops answering: give up well past the deadline.
        if (steady::now() > gate_->deadline() + std::chrono::seconds{20}) broken_ = true;
    }
    if (broken_) {
        stats_->error("raw:connection_failed_or_stuck");
        for (; active_ > 0; --active_) gate_->slot_done();
    }
}

void raw_driver::begin(std::uint32_t index, steady::time_point now) {
    if (!gate_->admit(now)) {
        --active_;
        gate_->slot_done();
        return;
    }
    restart_cycle(run_.cycles[index], now, run_.values);
    send_round(index);
}

void raw_driver::send_round(std::uint32_t index) {
    raw_cycle& c = run_.cycles[index];
    const round_kind kind = run_.plan.rounds[c.round];
    prepare_round(c, kind);
    const auto fan_out = [&](std::string_view bytes) {
        for (auto& n : nodes_) {
            n.out.append(bytes);
            n.requests.push({index, static_cast<std::uint32_t>(c.round)});
            ++requests_;
            n.dirty = true;
        }
    };
    if (load_.raw_library_encoder) {
        fan_out(encode_round(kind, c, run_.ttl_text, run_.wake_prefix).bytes());
        return;
    }
    sds cmd = nullptr;
    const int len = format_round(&cmd, kind, c, run_.ttl_text, run_.wake_prefix);
    if (len < 0) std::abort();  // out of memory
    fan_out({cmd, static_cast<std::size_t>(len)});
    redisFreeSdsCommand(cmd);
}

void raw_driver::on_reply(const redisReply* reply, pending p) {
    raw_cycle& c = run_.cycles[p.cycle];
    if (p.round != c.round) return;  // a straggler of a round already decided
    if (const char* anomaly = absorb_reply(run_.plan.rounds[p.round], reply, c))
        stats_->note(anomaly);
    ++c.answered;
    const bool last = c.round + 1 == run_.plan.rounds.size();
    if (!last && c.answered == run_.quorum) {
        const auto now = steady::now();
        if (c.round == run_.plan.acquired_after) stats_->acquire.record(nanos_between(c.t0, now));
        ++c.round;
        c.answered = 0;
        send_round(p.cycle);
    } else if (last && c.answered == nodes_.size()) {
        const auto now = steady::now();
        stats_->cycle.record(nanos_between(c.t0, now));
        stats_->completed.fetch_add(1, std::memory_order_relaxed);
        begin(p.cycle, now);
    }
}

auto raw_driver::read_node(node& n) -> bool {
    for (;;) {
        const ssize_t got = ::read(n.fd, read_buf_.data(), read_buf_.size());
        if (got < 0) return errno == EAGAIN || errno == EINTR;
        if (got == 0) return false;  // closed by the server
        if (redisReaderFeed(n.reader, read_buf_.data(), static_cast<std::size_t>(got)) != REDIS_OK)
            return false;
        for (;;) {
            void* reply = nullptr;
            if (redisReaderGetReply(n.reader, &reply) != REDIS_OK) return false;
            if (reply == nullptr) break;
            if (n.requests.empty()) {
                freeReplyObject(reply);
                return false;
            }
            on_reply(static_cast<const redisReply*>(reply), n.requests.pop());
            freeReplyObject(reply);
        }
        if (static_cast<std::size_t>(got) < read_buf_.size()) return true;
    }
}

auto raw_driver::flush(node& n) -> bool {
    n.dirty = false;
    while (n.sent < n.out.size()) {
        const ssize_t w = ::write(n.fd, n.out.data() + n.sent, n.out.size() - n.sent);
        ++writes_;
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) return false;
            poll_out(n, true);
            return true;
        }
        n.sent += static_cast<std::size_t>(w);
    }
    n.out.clear();
    n.sent = 0;
    if (n.polling_out) poll_out(n, false);
    return true;
}

void raw_driver::poll_out(node& n, bool on) {
    if (n.polling_out == on) return;
    n.polling_out = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0U);
    ev.data.u64 = static_cast<std::uint64_t>(&n - nodes_.data());
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, n.fd, &ev);
}

}  // namespace redlock::bench
