#include "support/redis_server.hpp"

#include "support/leftover_servers.hpp"
#include "support/loopback.hpp"
#include "support/probe_connection.hpp"

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdexcept>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <utility>

extern char** environ;  // NOLINT: POSIX declares it nowhere else

namespace redlock_test {
namespace {

/// The absolute path of `name` on PATH, or empty. Resolved before fork(),
/// because the child may only make async-signal-safe calls.
auto find_on_path(const std::string& name) -> std::string {
    const char* path = std::getenv("PATH");
    std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    while (!dirs.empty()) {
        const auto colon = dirs.find(':');
        const std::string dir{dirs.substr(0, colon)};
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        if (colon == std::string_view::npos) break;
        dirs.remove_prefix(colon + 1);
    }
    return {};
}

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto startup_limit = 5s;
constexpr int port_attempts = 8;
constexpr auto command_timeout = 2s;

auto work_dir() -> std::filesystem::path {
    auto dir = std::filesystem::temp_directory_path() / "redlock-tests";
    std::filesystem::create_directories(dir);
    return dir;
}

auto log_path(std::uint16_t port) -> std::filesystem::path {
    return work_dir() / ("redis-" + std::to_string(port) + ".log");
}

auto socket_path(std::uint16_t port) -> std::filesystem::path {
    return work_dir() / ("redis-" + std::to_string(port) + ".sock");
}

auto log_tail(const std::filesystem::path& file, std::size_t lines = 6) -> std::string {
    std::ifstream in{file};
    std::deque<std::string> last;
    for (std::string line; std::getline(in, line);) {
        last.push_back(std::move(line));
        if (last.size() > lines) last.pop_front();
    }
    std::string text;
    for (const auto& line : last) text += "\n    | " + line;
    return text.empty() ? "\n    | (log is empty)" : text;
}

/// The fixture's connection to its server on `port`, TLS when the options say so;
/// nullopt with `failure` set.
auto connect_to(std::uint16_t port, const server_options& options,
                std::chrono::milliseconds timeout, std::string* failure)
    -> std::optional<probe_connection> {
    if (!options.tls) return probe_connection::open(port, timeout, nullptr, failure);
    const probe_tls client{.cert_file = options.tls->client_cert_file,
                           .key_file = options.tls->client_key_file};
    return probe_connection::open(port, timeout, &client, failure);
}

/// AUTH [username] password on `c` when `options` carry a password. On failure, says why
/// in `failure` (the server's error text, which never contains the password).
auto authenticate(probe_connection& c, const server_options& options, std::string* failure)
    -> bool {
    if (options.password.empty()) return true;
    std::string why;
    auto reply = options.username.empty()
                     ? c.run({"AUTH", options.password}, &why)
                     : c.run({"AUTH", options.username, options.password}, &why);
    if (reply && reply->type == REDIS_REPLY_STATUS) return true;
    if (failure) {
        *failure = !reply ? "AUTH: no reply: " + why
                          : "AUTH failed: " + std::string{reply->str != nullptr ? reply->str : ""};
    }
    return false;
}

/// The pid of whatever redis answers PING on `port` right now, if any.
auto answering_pid(std::uint16_t port, const server_options& options) -> std::optional<pid_t> {
    auto c = connect_to(port, options, 200ms, nullptr);
    if (!c || !authenticate(*c, options, nullptr)) return std::nullopt;
    auto pong = c->run({"PING"}, nullptr);
    if (!pong || pong->type != REDIS_REPLY_STATUS || std::string_view{pong->str} != "PONG") {
        return std::nullopt;
    }
    auto info = c->run({"INFO", "server"}, nullptr);
    if (!info || info->type != REDIS_REPLY_STRING) return std::nullopt;
    std::string_view text{info->str, info->len};
    constexpr std::string_view field = "process_id:";
    auto at = text.find(field);
    if (at == std::string_view::npos) return std::nullopt;
    return static_cast<pid_t>(std::atol(text.substr(at + field.size()).data()));
}

auto describe_exit(int status) -> std::string {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string{"was killed by "} + strsignal(WTERMSIG(status));
    return "stopped";
}

struct spawn_outcome {
    pid_t pid = -1;       ///< > 0: up and answering
    std::string failure;  ///< otherwise, why not
    bool exited = false;  ///< it started and quit (typically: the port was taken)
};

auto spawn_redis(std::uint16_t port, const server_options& options) -> spawn_outcome {
    auto dir = work_dir();
    auto port_text = std::to_string(port);
    auto log = log_path(port).string();
    std::vector<std::string> args{
        "redis-server", "--bind", "127.0.0.1", "--save", "",      "--appendonly", "no",
        "--daemonize",  "no",     "--logfile", log,      "--dir", dir.string()};
    if (options.tls) {
        const auto& tls = *options.tls;
        args.insert(args.end(),
                    {"--port", "0", "--tls-port", port_text, "--tls-cert-file", tls.cert_file,
                     "--tls-key-file", tls.key_file, "--tls-ca-cert-file", tls.ca_file,
                     "--tls-auth-clients", tls.auth_clients ? "yes" : "no"});
    } else {
        args.insert(args.end(), {"--port", port_text});
    }
    if (options.unix_socket) {
        args.insert(args.end(),
                    {"--unixsocket", socket_path(port).string(), "--unixsocketperm", "700"});
    }
    args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    const std::string program = find_on_path("redis-server");
    if (program.empty()) {
        return {.failure =
                    "cannot run redis-server: it is not on PATH (is the redis-server "
                    "package installed?)"};
    }
    pid_t pid = -1;
    {
        signals_blocked quiet;  // the child starts with every signal blocked...
        install_handlers();
        const pid_t parent = ::getpid();
        pid = ::fork();
        if (pid == 0) {
            // Child: only async-signal-safe calls until exec. The kernel kills it
            // when the test process dies, however it dies (SIGKILL from a ctest
            // timeout, a sanitizer's _exit): no server outlives its test.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);  // the parent is already gone
            ::setpgid(0, 0);                          // its own group, killed as a whole
            const int in = ::open("/dev/null", O_RDONLY);
            const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (in < 0 || out < 0) ::_exit(126);
            ::dup2(in, 0);
            ::dup2(out, 1);
            ::dup2(out, 2);
            struct sigaction default_action {};
            default_action.sa_handler = SIG_DFL;
            for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &default_action, nullptr);
            sigset_t none;
            sigemptyset(&none);
            ::sigprocmask(SIG_SETMASK, &none, nullptr);  // ...and unblocks them all here
            ::execv(program.c_str(), argv.data());
            ::_exit(127);
        }
        if (pid > 0) remember(pid);
    }
    if (pid < 0) {
        return {.failure = "cannot fork for redis-server: " + std::string{std::strerror(errno)}};
    }

    auto deadline = clock_type::now() + startup_limit;
    for (;;) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            forget(pid);
            return {.failure = "redis-server on port " + port_text + " " + describe_exit(status) +
                               "; log " + log + ":" + log_tail(log),
                    .exited = true};
        }
        if (answering_pid(port, options) == pid) return {.pid = pid, .failure = {}};
        if (clock_type::now() >= deadline) break;
        std::this_thread::sleep_for(10ms);
    }
    kill_group(pid);
    forget(pid);
    ::waitpid(pid, nullptr, 0);
    return {.failure = "redis-server on port " + port_text +
                       " did not answer PING within 5 s; log " + log + ":" + log_tail(log)};
}

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

redis_server::redis_server(redis_server&& other) noexcept
    : pid_{std::exchange(other.pid_, -1)},
      port_{other.port_},
      frozen_{std::exchange(other.frozen_, false)},
      options_{std::move(other.options_)} {
    other.options_.unix_socket = false;  // the socket file is ours to remove now
}

auto redis_server::operator=(redis_server&& other) noexcept -> redis_server& {
    if (this != &other) {
        crash();
        remove_socket();
        pid_ = std::exchange(other.pid_, -1);
        port_ = other.port_;
        frozen_ = std::exchange(other.frozen_, false);
        options_ = std::move(other.options_);
        other.options_.unix_socket = false;
    }
    return *this;
}

redis_server::~redis_server() {
    crash();
    remove_socket();
}

void redis_server::remove_socket() noexcept {
    if (!options_.unix_socket || port_ == 0) return;
    std::error_code ignored;
    std::filesystem::remove(socket_path(port_), ignored);
}

void redis_server::start(bool pick_port) {
    std::string failures;
    for (int attempt = 0; attempt < (pick_port ? port_attempts : 1); ++attempt) {
        if (pick_port) port_ = free_port();
        auto outcome = spawn_redis(port_, options_);
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
    return socket_path(port_);
}

auto redis_server::unix_address() const -> redlock::node_address {
    if (!options_.unix_socket) {
        throw std::logic_error("redis-server 127.0.0.1:" + std::to_string(port_) +
                               " has no Unix socket (start it with server_options::unix_socket)");
    }
    return redlock::node_address{.host = {}, .port = 0, .unix_path = unix_socket().string()};
}

auto redis_server::log_file() const -> std::filesystem::path {
    return log_path(port_);
}

auto redis_server::command(const std::vector<std::string>& argv) const
    -> std::optional<std::string> {
    auto where = "redis-server 127.0.0.1:" + std::to_string(port_);
    if (pid_ <= 0) throw std::logic_error(where + " is crashed; restart() it before querying it");
    if (frozen_) throw std::logic_error(where + " is frozen; thaw() it before querying it");
    std::string failure;
    auto c = connect_to(port_, options_, command_timeout, &failure);
    if (!c) throw std::runtime_error(where + ": cannot connect: " + failure);
    if (!authenticate(*c, options_, &failure)) throw std::runtime_error(where + ": " + failure);
    auto reply = c->run(argv, &failure);
    if (!reply) throw std::runtime_error(where + ": no reply: " + failure);

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
