#include "client_setup.hpp"

#include "config_search.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>

namespace redlock::cli {
namespace {

/// Connections are still being set up when a fresh process has created its
/// client, and a request's deadline (request_timeout_ms) starts when it is
/// queued, so the first request would race the TCP connect. Every invocation
/// is such a fresh process, and --wait-ms 0 makes a single attempt: wait until
/// a quorum of nodes is connected, for at most connect_timeout_ms. The library
/// has no readiness notification, hence the short poll.
void await_quorum_connected(const client& locks) {
    const std::size_t quorum = locks.node_count() / 2 + 1;
    const auto deadline = std::chrono::steady_clock::now() + locks.config().connect_timeout;
    while (locks.stats().nodes_connected < quorum && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
}

/// The process's side of the search: its environment and its file system.
auto process_search_inputs(const global_options& global) -> config_search_inputs {
    return {global.config,
            [](const char* name) -> std::optional<std::string> {
                const char* value =
                    std::getenv(name);  // NOLINT(concurrency-mt-unsafe): before any thread
                if (value == nullptr) return std::nullopt;
                return std::string{value};
            },
            [](const std::string& path) {
                std::error_code ec;
                return std::filesystem::is_regular_file(path, ec);
            }};
}

/// Where the example configs are, found from the executable's own place so that
/// a package installed under any prefix names the right directory
/// (<prefix>/bin/redlock -> <prefix>/share/redlock); empty when not there, as
/// for a binary in a build tree.
auto examples_dir() -> std::string {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    const auto dir = exe.parent_path().parent_path() / "share" / "redlock";
    return std::filesystem::is_directory(dir, ec) ? dir.string() : std::string{};
}

}  // namespace

auto open_client(const global_options& global, const reporter& out)
    -> result<client, failure_report> {
    const auto inputs = process_search_inputs(global);
    const auto choice = find_config(inputs);
    if (!choice) {
        const auto examples = examples_dir();
        return failure{failure_report{exit_config, "no_config",
                                      no_config_message(inputs, examples.empty() ? "configs/ in "
                                                                                   "the source tree"
                                                                                 : examples)}};
    }
    auto config = load_config(choice->path);
    if (!config) {
        return failure{failure_report{exit_config, "invalid_config", config.error().what()}};
    }
    if (out.verbose()) {
        config->logger = [](log_level, std::string_view line) {
            std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
        };
    } else {
        config->logger = [](log_level, std::string_view) {};
    }
    const std::size_t nodes = config->member_count();
    auto made = client::create(std::move(*config));
    if (!made) {
        failure_report report = classify(made.error());
        report.message = choice->path + ": " + report.message;
        return failure{std::move(report)};
    }
    await_quorum_connected(*made);
    out.detail("config " + choice->path + " (" +
               (choice->source == "search" ? std::string{"found by the search"}
                                           : "from " + choice->source) +
               "): " + std::to_string(nodes) + " members, quorum " + std::to_string(nodes / 2 + 1));
    return std::move(*made);
}

auto adopt_value(const client& locks, const value_options& args) -> lock {
    if (args.shared) return locks.adopt(args.resource, args.value, lock_kind::shared);
    if (args.permits)
        return locks.adopt(args.resource, args.value, lock_kind::permit, *args.permits);
    return locks.adopt(args.resource, args.value);
}

auto make_lock_options(const lock_flags& flags) -> lock_options {
    lock_options options;
    if (flags.ttl_ms) options.ttl = std::chrono::milliseconds{*flags.ttl_ms};
    if (flags.wait_ms == 0) {
        options.attempts = 1;
    } else {
        options.max_wait = std::chrono::milliseconds{flags.wait_ms};
    }
    if (flags.fence) options.fencing = true;
    if (flags.holder) options.holder = *flags.holder;
    if (flags.lock_delay_ms) options.lock_delay = std::chrono::milliseconds{*flags.lock_delay_ms};
    // Waiting (--wait-ms > 0) is the library's: queued per node and woken by the
    // holder's release, never a polling loop; --fair keeps arrival order.
    if (flags.fair) options.wait = wait_mode::fair;
    if (flags.shared) options.shared = true;
    if (flags.permits) {
        options.permits = *flags.permits;
        // Not the config's lock.fencing either: a permit has no token (main
        // refuses --fence with --permits).
        options.fencing = false;
    }
    return options;
}

}  // namespace redlock::cli
