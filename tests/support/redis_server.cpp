#include "support/redis_server.hpp"

#include "support/leftover_servers.hpp"
#include "support/loopback.hpp"
#include "support/server_process.hpp"

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netinet/in.h>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>
#include <utility>

namespace redlock_test {
namespace {

using namespace std::chrono_literals;

constexpr int port_attempts = 8;
constexpr auto command_timeout = 2s;

}  // namespace

auto free_port() -> std::uint16_t {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string{"socket: "} + std::strerror(errno));
    sockaddr_in address = loopback(0);
    socklen_t length = sizeof address;
    auto* generic = reinterpret_cast<sockaddr*>(&address);
    if (::bind(fd, generic, sizeof address) != 0 || ::getsockname(fd, generic, &length) != 0) {
        int saved = errno;
        ::close(fd);
        throw std::runtime_error(std::string{"cannot find a free loopback port: "} +
                                 std::strerror(saved));
    }
    ::close(fd);
    return ntohs(address.sin_port);
}

redis_server::redis_server(std::uint16_t port) : port_{port} {
    start(port == 0);
}

redis_server::redis_server(server_options options, std::uint16_t port)
    : port_{port}, options_{std::move(options)} {
    start(port == 0);
}

redis_server::redis_server(server_options options, server_mode mode, std::uint16_t port)
    : port_{port}, options_{std::move(options)}, mode_{std::move(mode)} {
    start(port == 0);
}

redis_server::redis_server(redis_server&& other) noexcept
    : pid_{std::exchange(other.pid_, -1)},
      port_{other.port_},
      bus_port_{other.bus_port_},
      state_dir_{std::exchange(other.state_dir_, {})},  // ours to remove now
      frozen_{std::exchange(other.frozen_, false)},
      options_{std::move(other.options_)},
      mode_{std::move(other.mode_)} {
    other.options_.unix_socket = false;  // the socket file is ours to remove now
}

auto redis_server::operator=(redis_server&& other) noexcept -> redis_server& {
    if (this != &other) {
        crash();
        remove_socket();
        remove_state_dir();
        pid_ = std::exchange(other.pid_, -1);
        port_ = other.port_;
        bus_port_ = other.bus_port_;
        state_dir_ = std::exchange(other.state_dir_, {});
        frozen_ = std::exchange(other.frozen_, false);
        options_ = std::move(other.options_);
        mode_ = std::move(other.mode_);
        other.options_.unix_socket = false;
    }
    return *this;
}

redis_server::~redis_server() {
    crash();
    remove_socket();
    remove_state_dir();
}

void redis_server::remove_socket() noexcept {
    if (!options_.unix_socket || port_ == 0) return;
    std::error_code ignored;
    std::filesystem::remove(detail::socket_path(port_), ignored);
}

void redis_server::remove_state_dir() noexcept {
    if (state_dir_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(state_dir_, ignored);
    state_dir_.clear();
}

void redis_server::start(bool pick_port) {
    if (state_dir_.empty() && (mode_.cluster || mode_.sentinel_config || mode_.own_dir)) {
        state_dir_ = detail::make_state_dir();
    }
    // A cluster node's bus port is picked with its port, and kept with it: the other nodes
    // reach a restarted node where its nodes.conf, and theirs, say it is.
    const bool pick_bus = mode_.cluster && (pick_port || bus_port_ == 0);
    std::string failures;
    for (int attempt = 0; attempt < (pick_port || pick_bus ? port_attempts : 1); ++attempt) {
        if (pick_port) port_ = free_port();
        if (pick_bus) {
            do bus_port_ = free_port();
            while (bus_port_ == port_);
        }
        auto outcome = detail::spawn_server({.port = port_,
                                             .bus_port = bus_port_,
                                             .state_dir = state_dir_,
                                             .options = &options_,
                                             .mode = &mode_});
        if (outcome.pid > 0) {
            pid_ = outcome.pid;
            frozen_ = false;
            return;
        }
        failures += "\n  " + outcome.failure;
        if (!outcome.exited) break;  // missing binary or a hang: trying again will not help
    }
    throw std::runtime_error(
        "REDIS-SERVER DID NOT START (integration tests need a working "
        "redis-server; they never skip):" +
        failures);
}

void redis_server::crash() {
    if (pid_ <= 0) return;
    kill_group(pid_);  // SIGKILL also ends a stopped process
    forget(pid_);      // before reaping: until then the pid cannot be reused
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    frozen_ = false;
}

void redis_server::restart() {
    crash();
    start(false);
}

void redis_server::restart_fresh() {
    crash();
    if (!state_dir_.empty()) {
        for (const auto& entry : std::filesystem::directory_iterator{state_dir_}) {
            std::filesystem::remove_all(entry.path());
        }
    }
    start(false);
}

void redis_server::freeze() {
    if (pid_ <= 0) throw std::logic_error("freeze(): redis-server is not running");
    ::kill(pid_, SIGSTOP);
    frozen_ = true;
}

void redis_server::thaw() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    frozen_ = false;
}

auto redis_server::address() const -> redlock::node_address {
    return redlock::node_address{.host = "127.0.0.1", .port = port_, .unix_path = {}};
}

auto redis_server::unix_socket() const -> std::filesystem::path {
    if (!options_.unix_socket) return {};
    return detail::socket_path(port_);
}

auto redis_server::unix_address() const -> redlock::node_address {
    if (!options_.unix_socket) {
        throw std::logic_error("redis-server 127.0.0.1:" + std::to_string(port_) +
                               " has no Unix socket (start it with server_options::unix_socket)");
    }
    return redlock::node_address{.host = {}, .port = 0, .unix_path = unix_socket().string()};
}

auto redis_server::log_file() const -> std::filesystem::path {
    return detail::log_path(port_, mode_);
}

auto redis_server::query(const std::vector<std::string>& argv) const -> reply_ptr {
    auto where = std::string{mode_.sentinel_config ? "Sentinel" : "redis-server"} +
                 " 127.0.0.1:" + std::to_string(port_);
    if (pid_ <= 0) throw std::logic_error(where + " is crashed; restart() it before querying it");
    if (frozen_) throw std::logic_error(where + " is frozen; thaw() it before querying it");
    std::string failure;
    auto c = detail::connect_to(port_, options_, command_timeout, &failure);
    if (!c) throw std::runtime_error(where + ": cannot connect: " + failure);
    if (!detail::authenticate(*c, options_, &failure)) {
        throw std::runtime_error(where + ": " + failure);
    }
    auto reply = c->run(argv, &failure);
    if (!reply) throw std::runtime_error(where + ": no reply: " + failure);
    return reply;
}

auto redis_server::command(const std::vector<std::string>& argv) const
    -> std::optional<std::string> {
    auto reply = query(argv);

    auto render = [](const redisReply& r) -> std::optional<std::string> {
        switch (r.type) {
            case REDIS_REPLY_STRING:
            case REDIS_REPLY_STATUS:
                return std::string{r.str, r.len};
            case REDIS_REPLY_ERROR:
                // Not "-" + std::string{...}: a false -Wrestrict with GCC 12 at -O2.
                return std::string{"-"}.append(r.str, r.len);
            case REDIS_REPLY_INTEGER:
                return std::to_string(r.integer);
            case REDIS_REPLY_NIL:
                return std::nullopt;
            default:
                return std::string{};
        }
    };
    if (reply->type != REDIS_REPLY_ARRAY) return render(*reply);
    std::string joined;
    for (std::size_t i = 0; i < reply->elements; ++i) {
        if (i > 0) joined += '\n';
        joined += render(*reply->element[i]).value_or("");
    }
    return joined;
}

auto redis_server::get(const std::string& key) const -> std::optional<std::string> {
    auto value = command({"GET", key});
    if (value && value->starts_with('-')) throw std::runtime_error("GET " + key + ": " + *value);
    return value;
}

auto redis_server::exists(const std::string& key) const -> bool {
    return command({"EXISTS", key}) == "1";
}

auto redis_server::dbsize() const -> long long {
    return std::stoll(command({"DBSIZE"}).value_or("0"));
}

auto redis_server::pttl(const std::string& key) const -> long long {
    return std::stoll(command({"PTTL", key}).value_or("-2"));
}

auto persisting_every_write(const std::string& tag) -> server_options {
    static std::atomic<int> instance{0};
    server_options durable;
    durable.extra_args = {
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--appenddirname",
        tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(++instance)};
    return durable;
}

}  // namespace redlock_test
