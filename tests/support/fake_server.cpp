#include "support/fake_server.hpp"

#include "support/loopback.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace redlock_test {

namespace resp {

// Replies are appended piece by piece: `"+" + std::string{...}` makes GCC 12
// at -O2 raise a false -Wrestrict in the insert that operator+ inlines.
auto status(std::string_view text) -> std::string {
    return std::string{"+"}.append(text).append("\r\n");
}

auto error(std::string_view text) -> std::string {
    return std::string{"-"}.append(text).append("\r\n");
}

auto bulk(std::string_view text) -> std::string {
    return std::string{"$"}
        .append(std::to_string(text.size()))
        .append("\r\n")
        .append(text)
        .append("\r\n");
}

auto nil() -> std::string {
    return "$-1\r\n";
}

auto integer(long long value) -> std::string {
    return std::string{":"}.append(std::to_string(value)).append("\r\n");
}

auto array(std::initializer_list<std::string> elements) -> std::string {
    std::string out = std::string{"*"}.append(std::to_string(elements.size())).append("\r\n");
    for (const auto& e : elements) out += e;
    return out;
}

}  // namespace resp

namespace {

using clock_type = std::chrono::steady_clock;

auto fake_server_failure(const char* what) -> std::runtime_error {
    return socket_error("fake_server", what);
}

auto lower(std::string_view text) -> std::string {
    std::string out{text};
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

/// One answer on its way out.
struct segment {
    fake_answer answer;
    std::size_t sent = 0;  // of bytes + filler

    [[nodiscard]] auto total() const noexcept -> std::size_t {
        return answer.bytes.size() + answer.filler;
    }
};

struct connection {
    int fd = -1;
    redisReader* reader = nullptr;
    std::deque<segment> out;
    clock_type::time_point next_byte{};
    bool half_closed = false;  // FIN sent: read and discard until the client closes too
};

}  // namespace

struct fake_server::state {
    behaviour how;
    int listener = -1;
    int wake[2] = {-1, -1};  // the destructor writes a byte: stop

    mutable std::mutex mutex;
    std::vector<fake_command> commands;
    std::size_t accepted = 0;
    std::size_t closed_by_client = 0;
    std::size_t bytes_sent = 0;
};

fake_server::fake_server(behaviour how) : state_{std::make_unique<state>()} {
    state_->how = std::move(how);
    if (::pipe2(state_->wake, O_CLOEXEC | O_NONBLOCK) != 0) throw fake_server_failure("pipe2");
    state_->listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (state_->listener < 0) {
        auto failure = fake_server_failure("socket");
        ::close(state_->wake[0]);
        ::close(state_->wake[1]);
        throw failure;
    }
    sockaddr_in address = loopback(0);
    socklen_t length = sizeof address;
    auto* generic = reinterpret_cast<sockaddr*>(&address);
    if (::bind(state_->listener, generic, sizeof address) != 0 ||
        ::getsockname(state_->listener, generic, &length) != 0 ||
        ::listen(state_->listener, 64) != 0) {
        auto failure = fake_server_failure("bind/listen on 127.0.0.1");
        ::close(state_->listener);
        ::close(state_->wake[0]);
        ::close(state_->wake[1]);
        throw failure;
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread{[this] { run(); }};
}

fake_server::~fake_server() {
    const char stop = 's';
    while (::write(state_->wake[1], &stop, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
    ::close(state_->listener);
    ::close(state_->wake[0]);
    ::close(state_->wake[1]);
}

auto fake_server::address() const -> redlock::node_address {
    return redlock::node_address{.host = "127.0.0.1", .port = port_, .unix_path = {}};
}

auto fake_server::commands() const -> std::vector<fake_command> {
    std::lock_guard held{state_->mutex};
    return state_->commands;
}

auto fake_server::received(std::string_view name) const -> std::size_t {
    std::lock_guard held{state_->mutex};
    return static_cast<std::size_t>(
        std::count_if(state_->commands.begin(), state_->commands.end(),
                      [&](const fake_command& c) { return is_command(c, name); }));
}

auto fake_server::connections() const -> std::size_t {
    std::lock_guard held{state_->mutex};
    return state_->accepted;
}

auto fake_server::closed_by_client() const -> std::size_t {
    std::lock_guard held{state_->mutex};
    return state_->closed_by_client;
}

auto fake_server::bytes_sent() const -> std::size_t {
    std::lock_guard held{state_->mutex};
    return state_->bytes_sent;
}

auto is_command(const fake_command& command, std::string_view name) -> bool {
    return !command.empty() && lower(command.front()) == lower(name);
}

auto fake_server::handshake_answer(const fake_command& command, std::string_view run_id)
    -> std::optional<fake_answer> {
    const auto arg = [&](std::size_t i) {
        return command.size() > i ? lower(command[i]) : std::string{};
    };
    if (is_command(command, "AUTH")) return fake_answer{.bytes = resp::status("OK")};
    if (is_command(command, "PING")) return fake_answer{.bytes = resp::status("PONG")};
    if (is_command(command, "SCRIPT") && arg(1) == "load") {
        // The name is not checked by the client; any 40 hex digits will do.
        return fake_answer{.bytes = resp::bulk(std::string(40, 'f'))};
    }
    if (is_command(command, "SCRIPT") && arg(1) == "exists") {
        // Every script is there: the handshake loads none.
        std::string bytes = "*" + std::to_string(command.size() - 2) + "\r\n";
        for (std::size_t i = 2; i < command.size(); ++i) bytes += resp::integer(1);
        return fake_answer{.bytes = bytes};
    }
    if (is_command(command, "INFO")) {
        // Any number of sections, as Redis 7 takes them; none: the default ones.
        const auto asked = [&](std::string_view section) {
            if (command.size() < 2) return true;
            for (std::size_t i = 1; i < command.size(); ++i) {
                if (lower(command[i]) == section) return true;
            }
            return false;
        };
        std::string text;
        if (asked("server")) {
            text += "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\nrun_id:" +
                    std::string{run_id} + "\r\n";
        }
        if (asked("persistence")) {
            text += "# Persistence\r\nloading:0\r\naof_enabled:0\r\n";
        }
        if (asked("replication")) {
            text += "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n";
        }
        return fake_answer{.bytes = resp::bulk(text)};
    }
    if (is_command(command, "CONFIG") && arg(1) == "get") {
        if (arg(2) == "appendfsync") {
            return fake_answer{
                .bytes = resp::array({resp::bulk("appendfsync"), resp::bulk("everysec")})};
        }
        return fake_answer{.bytes = "*0\r\n"};
    }
    if (is_command(command, "TIME")) {
        // The handshake reads the node's clock (a step quarantines the node).
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
        return fake_answer{.bytes = resp::array({resp::bulk(std::to_string(us / 1'000'000)),
                                                 resp::bulk(std::to_string(us % 1'000'000))})};
    }
    if (is_command(command, "ROLE")) {
        return fake_answer{.bytes =
                               resp::array({resp::bulk("master"), resp::integer(0), "*0\r\n"})};
    }
    return std::nullopt;
}

auto fake_server::after_handshake(handler rest) -> handler {
    return [rest = std::move(rest)](const fake_command& command) -> fake_answer {
        if (auto answer = handshake_answer(command)) return *std::move(answer);
        return rest(command);
    };
}

void fake_server::run() {
    std::vector<std::unique_ptr<connection>> connections;
    static const std::string filler_chunk(64 * 1024, 'x');
    char buffer[64 * 1024];

    const auto drop = [&](std::size_t i) {
        ::close(connections[i]->fd);
        redisReaderFree(connections[i]->reader);
        connections.erase(connections.begin() + static_cast<std::ptrdiff_t>(i));
    };
    const auto queue = [](connection& c, fake_answer answer) {
        if (answer.bytes.empty() && answer.filler == 0 && !answer.close) return;
        if (c.out.empty() && answer.trickle) c.next_byte = clock_type::now();
        c.out.push_back(segment{std::move(answer), 0});
    };
    // Returns false when the connection is finished with (closed by us after an answer).
    const auto write_out = [&](connection& c) {
        while (!c.out.empty() && !c.half_closed) {
            segment& s = c.out.front();
            while (s.sent < s.total()) {
                const auto now = clock_type::now();
                if (s.answer.trickle && now < c.next_byte) return;
                const char* data = nullptr;
                std::size_t length = 0;
                if (s.sent < s.answer.bytes.size()) {
                    data = s.answer.bytes.data() + s.sent;
                    length = s.answer.bytes.size() - s.sent;
                } else {
                    data = filler_chunk.data();
                    length = std::min(filler_chunk.size(), s.total() - s.sent);
                }
                if (s.answer.trickle) length = 1;
                const ssize_t n = ::send(c.fd, data, length, MSG_NOSIGNAL);
                if (n < 0) {
                    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
                    c.out.clear();  // the client went away; its close is read next
                    return;
                }
                s.sent += static_cast<std::size_t>(n);
                {
                    std::lock_guard held{state_->mutex};
                    state_->bytes_sent += static_cast<std::size_t>(n);
                }
                if (s.answer.trickle) c.next_byte = now + state_->how.byte_interval;
            }
            if (s.answer.close) {
                ::shutdown(c.fd, SHUT_WR);  // FIN after the bytes: a reply cut short, no RST
                c.half_closed = true;
                c.out.clear();
                return;
            }
            c.out.pop_front();
            if (!c.out.empty() && c.out.front().answer.trickle) {
                c.next_byte = std::max(c.next_byte, clock_type::now());
            }
        }
    };
    const auto wants_write = [](const connection& c) {
        return !c.half_closed && !c.out.empty() && !c.out.front().answer.trickle;
    };

    for (;;) {
        std::vector<pollfd> watched;
        watched.push_back(pollfd{.fd = state_->wake[0], .events = POLLIN, .revents = 0});
        watched.push_back(pollfd{.fd = state_->listener, .events = POLLIN, .revents = 0});
        int timeout_ms = -1;
        const auto now = clock_type::now();
        for (const auto& c : connections) {
            short events = POLLIN;
            if (wants_write(*c)) events |= POLLOUT;
            watched.push_back(pollfd{.fd = c->fd, .events = events, .revents = 0});
            if (!c->half_closed && !c->out.empty() && c->out.front().answer.trickle) {
                const auto wait = std::chrono::ceil<std::chrono::milliseconds>(c->next_byte - now);
                const int ms = static_cast<int>(std::max<std::int64_t>(wait.count(), 0));
                timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
            }
        }
        const int ready = ::poll(watched.data(), watched.size(), timeout_ms);
        if (ready < 0 && errno != EINTR) return;
        if (watched[0].revents != 0) break;

        // Existing connections first: their indexes match `watched` from 2 on.
        for (std::size_t i = connections.size(); i-- > 0;) {
            connection& c = *connections[i];
            const short revents = watched[i + 2].revents;
            bool closed = false;
            if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
                const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
                if (n == 0 ||
                    (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                    closed = true;
                } else if (n > 0 && !c.half_closed) {
                    redisReaderFeed(c.reader, buffer, static_cast<std::size_t>(n));
                    for (;;) {
                        void* raw = nullptr;
                        if (redisReaderGetReply(c.reader, &raw) != REDIS_OK) {
                            closed = true;  // the client spoke nonsense: not our test
                            break;
                        }
                        if (raw == nullptr) break;
                        auto* reply = static_cast<redisReply*>(raw);
                        fake_command command;
                        if (reply->type == REDIS_REPLY_ARRAY) {
                            for (std::size_t e = 0; e < reply->elements; ++e) {
                                const redisReply* element = reply->element[e];
                                command.emplace_back(element->str != nullptr ? element->str : "",
                                                     element->str != nullptr ? element->len : 0);
                            }
                        }
                        freeReplyObject(reply);
                        {
                            std::lock_guard held{state_->mutex};
                            state_->commands.push_back(command);
                        }
                        if (state_->how.on_command) queue(c, state_->how.on_command(command));
                    }
                }
            }
            if (!closed) write_out(c);
            if (closed) {
                {
                    std::lock_guard held{state_->mutex};
                    ++state_->closed_by_client;
                }
                drop(i);
            }
        }
        // Trickles that are due, whatever poll() reported.
        for (auto& c : connections) {
            if (!c->out.empty() && c->out.front().answer.trickle) write_out(*c);
        }

        if ((watched[1].revents & POLLIN) != 0) {
            for (;;) {
                const int fd =
                    ::accept4(state_->listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) break;
                auto c = std::make_unique<connection>();
                c->fd = fd;
                c->reader = redisReaderCreate();
                {
                    std::lock_guard held{state_->mutex};
                    ++state_->accepted;
                }
                if (state_->how.on_accept) queue(*c, *state_->how.on_accept);
                write_out(*c);
                connections.push_back(std::move(c));
            }
        }
    }
    while (!connections.empty()) drop(connections.size() - 1);
}

}  // namespace redlock_test
