#include "support/server_process.hpp"

#include "support/leftover_servers.hpp"

#include <hiredis/hiredis.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <signal.h>
#include <stdexcept>
#include <string_view>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace redlock_test::detail {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto startup_limit = 5s;

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

/// A Sentinel's configuration file, written once: Sentinel requires a writable one and
/// rewrites it with what it learns (its ID, the replicas and other Sentinels it met).
auto sentinel_config_file(const spawn_request& request) -> std::string {
    const auto file = request.state_dir / "sentinel.conf";
    if (!std::filesystem::exists(file)) {
        std::ofstream out{file};
        out << *request.mode->sentinel_config << '\n';
        if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
    }
    return file.string();
}

auto command_line(const spawn_request& request, const std::string& log)
    -> std::vector<std::string> {
    const auto& options = *request.options;
    const auto& mode = *request.mode;
    const auto port_text = std::to_string(request.port);
    const auto dir = request.state_dir.empty() ? work_dir() : request.state_dir;
    std::vector<std::string> args{"redis-server"};
    if (mode.sentinel_config) {
        // The configuration file must come first; persistence settings do not apply.
        args.insert(args.end(), {sentinel_config_file(request), "--sentinel"});
    } else {
        args.insert(args.end(), {"--save", "", "--appendonly", "no"});
    }
    args.insert(args.end(), {"--bind", "127.0.0.1", "--daemonize", "no", "--logfile", log, "--dir",
                             dir.string()});
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
        args.insert(args.end(), {"--unixsocket", socket_path(request.port).string(),
                                 "--unixsocketperm", "700"});
    }
    if (mode.cluster) {
        const auto nodes_conf = request.state_dir / ("nodes-" + port_text + ".conf");
        args.insert(args.end(),
                    {"--cluster-enabled", "yes", "--cluster-config-file", nodes_conf.string(),
                     "--cluster-node-timeout", std::to_string(mode.cluster->node_timeout.count()),
                     "--cluster-port", std::to_string(request.bus_port),
                     // What CLUSTER SLOTS and MOVED name it by, whatever it learns from MEET.
                     "--cluster-announce-ip", "127.0.0.1"});
    }
    args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
    return args;
}

}  // namespace

auto work_dir() -> std::filesystem::path {
    auto dir = std::filesystem::temp_directory_path() / "redlock-tests";
    std::filesystem::create_directories(dir);
    return dir;
}

auto log_path(std::uint16_t port, const server_mode& mode) -> std::filesystem::path {
    const char* kind = mode.sentinel_config ? "sentinel-" : "redis-";
    return work_dir() / (kind + std::to_string(port) + ".log");
}

auto socket_path(std::uint16_t port) -> std::filesystem::path {
    return work_dir() / ("redis-" + std::to_string(port) + ".sock");
}

auto make_state_dir() -> std::filesystem::path {
    std::string pattern = (work_dir() / "state-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
    }
    return pattern;
}

auto connect_to(std::uint16_t port, const server_options& options,
                std::chrono::milliseconds timeout, std::string* failure)
    -> std::optional<probe_connection> {
    if (!options.tls) return probe_connection::open(port, timeout, nullptr, failure);
    const probe_tls client{.cert_file = options.tls->client_cert_file,
                           .key_file = options.tls->client_key_file};
    return probe_connection::open(port, timeout, &client, failure);
}

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

auto spawn_server(const spawn_request& request) -> spawn_outcome {
    const auto& options = *request.options;
    const auto port_text = std::to_string(request.port);
    const auto log = log_path(request.port, *request.mode).string();
    auto args = command_line(request, log);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    // The environment, prepared before the fork (the child only calls execve).
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry{*e};
        bool replaced = false;
        for (const auto& extra : request.mode->environment)
            replaced = replaced || entry.substr(0, entry.find('=') + 1) ==
                                       std::string_view{extra}.substr(0, extra.find('=') + 1);
        if (!replaced) env.emplace_back(entry);
    }
    env.insert(env.end(), request.mode->environment.begin(), request.mode->environment.end());
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

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
            ::execve(program.c_str(), argv.data(), envp.data());
            ::_exit(127);
        }
        if (pid > 0) remember(pid);
    }
    if (pid < 0) {
        return {.failure = "cannot fork for redis-server: " + std::string{std::strerror(errno)}};
    }

    const char* what = request.mode->sentinel_config ? "redis-server --sentinel" : "redis-server";
    auto deadline = clock_type::now() + startup_limit;
    for (;;) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            forget(pid);
            return {.failure = std::string{what} + " on port " + port_text + " " +
                               describe_exit(status) + "; log " + log + ":" + log_tail(log),
                    .exited = true};
        }
        if (answering_pid(request.port, options) == pid) return {.pid = pid, .failure = {}};
        if (clock_type::now() >= deadline) break;
        std::this_thread::sleep_for(10ms);
    }
    kill_group(pid);
    forget(pid);
    ::waitpid(pid, nullptr, 0);
    return {.failure = std::string{what} + " on port " + port_text +
                       " did not answer PING within 5 s; log " + log + ":" + log_tail(log)};
}

}  // namespace redlock_test::detail
