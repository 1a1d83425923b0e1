#include "cli/cli_process.hpp"

#include "support/slowdown.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <fstream>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;  // NOLINT: POSIX names it so

namespace redlock_test {

namespace {

std::atomic<int> next_id{0};

auto make_dir(const std::string& prefix) -> std::filesystem::path {
    static std::atomic<int> counter{0};
    auto made = std::filesystem::temp_directory_path() /
                (prefix + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(made);
    std::filesystem::create_directories(made);
    return made;
}

}  // namespace

cli_process::cli_process(const std::vector<std::string>& args, const std::filesystem::path& dir,
                         const std::vector<std::string>& env, const std::filesystem::path& cwd) {
    const int id = next_id.fetch_add(1);
    out_ = dir / ("redlock-" + std::to_string(id) + ".out");
    err_ = dir / ("redlock-" + std::to_string(id) + ".err");

    std::vector<std::string> argv{REDLOCK_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> arg_pointers;
    for (auto& a : argv) arg_pointers.push_back(a.data());
    arg_pointers.push_back(nullptr);
    std::vector<std::string> envs;
    const auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string entry{*e};
        const bool overridden = std::any_of(env.begin(), env.end(), [&](const std::string& mine) {
            return name_of(mine) == name_of(entry);
        });
        if (!overridden) envs.push_back(entry);
    }
    for (const auto& mine : env)
        if (mine.find('=') != std::string::npos) envs.push_back(mine);
    std::vector<char*> env_pointers;
    for (auto& e : envs) env_pointers.push_back(e.data());
    env_pointers.push_back(nullptr);

    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&files, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&files, cwd.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    started_ = std::chrono::steady_clock::now();
    const int rc = posix_spawn(&pid_, argv.front().c_str(), &files, &attr, arg_pointers.data(),
                               env_pointers.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&files);
    if (rc != 0) {
        pid_ = -1;
        throw std::runtime_error("cannot start " + argv.front() + ": error " + std::to_string(rc));
    }
}

cli_process::~cli_process() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);  // the group: redlock and whatever it runs
    if (!status_) {
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
}

void cli_process::signal(int sig) const {
    if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

auto cli_process::try_reap() -> bool {
    if (status_) return true;
    int raw = 0;
    if (waitpid(pid_, &raw, WNOHANG) != pid_) return false;
    status_ = WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : WEXITSTATUS(raw);
    return true;
}

auto cli_process::running() -> bool {
    return !try_reap();
}

auto cli_process::wait(std::chrono::milliseconds timeout) -> cli_result {
    timeout = scaled(timeout);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!try_reap()) {
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error("redlock (pid " + std::to_string(pid_) +
                                     ") still running after " + std::to_string(timeout.count()) +
                                     " ms; stderr so far: " + slurp(err_));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
    cli_result result;
    result.status = *status_;
    result.out = slurp(out_);
    result.err = slurp(err_);
    result.took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started_);
    return result;
}

auto slurp(const std::filesystem::path& file) -> std::string {
    std::ifstream in{file};
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

auto quoted(const std::string& text) -> std::string {
    std::string q = "'";
    for (char c : text) q += c == '\'' ? std::string{"'\\''"} : std::string{c};
    return q + "'";
}

auto one_object(const cli_result& r) -> nlohmann::json {
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    auto parsed = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    REQUIRE_FALSE(parsed.is_discarded());
    REQUIRE(parsed.is_object());
    return parsed;
}

cli_fixture::cli_fixture(const std::string& dir_prefix, const cli_timeouts& timeouts)
    : dir{make_dir(dir_prefix)}, config{dir / "cluster.json"} {
    const std::chrono::milliseconds connect_timeout{timeouts.connect_timeout_ms};
    auto nodes = nlohmann::json::array();
    for (const auto& s : *this) nodes.push_back({{"host", "127.0.0.1"}, {"port", s.port()}});
    const nlohmann::json settings{{"nodes", nodes},
                                  {"connect_timeout_ms", scaled(connect_timeout).count()},
                                  {"request_timeout_ms", timeouts.request_timeout_ms},
                                  {"lock", {{"ttl_ms", timeouts.ttl_ms}}},
                                  {"retry", {{"attempts", 3}, {"delay_ms", 50}, {"jitter_ms", 50}}},
                                  {"reconnect", {{"min_delay_ms", 20}, {"max_delay_ms", 200}}}};
    std::ofstream{config} << settings.dump(2);
}

cli_fixture::~cli_fixture() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
}

auto cli_fixture::redlock(std::vector<std::string> args, std::vector<std::string> env)
    -> cli_result {
    return start(std::move(args), std::move(env))->wait();
}

auto cli_fixture::start(std::vector<std::string> args, std::vector<std::string> env)
    -> std::unique_ptr<cli_process> {
    args.insert(args.begin(), {"--config", config.string()});
    return std::make_unique<cli_process>(args, dir, env);
}

}  // namespace redlock_test
