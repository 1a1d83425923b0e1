#include "client_setup.hpp"

#include "config_search.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
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
///
/// A process that is going to wait (`waits`) opened its subscriber connections
/// with the others (client::open_wake_connections), and waits for them too, and
/// for the rest of the nodes: an attempt that begins with every subscription
/// answered can, once refused, sleep until the holder's release wakes it; one
/// that begins without looks again after 2 x request_timeout (a release could
/// have gone unheard), which costs an attempt on every node. Likewise, a node
/// still in its handshake when the others refused answers late, and gets a
/// release in case it granted. The subscriber connections are dialled after the
/// others, and a busy machine delays them more: once the quorum is up, the rest
/// get twice as long again as the quorum took, at least 25 ms, within
/// connect_timeout_ms. Up at once as a rule; a node that is down costs that.
void await_ready(const client& locks, bool waits) {
    using clock = std::chrono::steady_clock;
    const std::size_t quorum = locks.node_count() / 2 + 1;
    const std::size_t standalone = locks.config().nodes.size();  // what the counts count
    const auto start = clock::now();
    const auto deadline = start + locks.config().connect_timeout;
    std::optional<clock::time_point> rest_deadline;
    for (auto now = start; now < deadline; now = clock::now()) {
        const client_stats s = locks.stats();
        if (s.nodes_connected >= quorum) {
            if (!waits) return;
            if (s.nodes_connected >= standalone && s.subscribers_ready >= standalone) return;
            if (!rest_deadline)
                rest_deadline = now + std::max<clock::duration>(2 * (now - start),
                                                                std::chrono::milliseconds{25});
            if (now >= *rest_deadline) return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds{250});
    }
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

auto open_client(const global_options& global, const reporter& out, bool waits)
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
    if (waits) made->open_wake_connections();
    await_ready(*made, waits);
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
