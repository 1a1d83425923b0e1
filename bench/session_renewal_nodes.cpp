#include "session_renewal_nodes.hpp"

#include "hiredis_commands.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace redlock::bench {
namespace {

/// "calls=5,usec=1234,usec_per_call=246.80,...": the number after `name=`.
auto number(std::string_view stats, std::string_view name) -> std::uint64_t {
    const std::string key = std::string{name} + "=";
    std::size_t at = stats.find(key);
    // "usec=" is also the end of "..._usec="; the field wanted starts the text or follows ','.
    while (at != std::string_view::npos && at != 0 && stats[at - 1] != ',')
        at = stats.find(key, at + 1);
    if (at == std::string_view::npos) return 0;
    return std::strtoull(std::string{stats.substr(at + key.size())}.c_str(), nullptr, 10);
}

auto info(redisContext* c, std::string_view section) -> std::optional<std::string> {
    auto r = command(c, {"INFO", section});
    if (!r || r->type != REDIS_REPLY_STRING) return std::nullopt;
    return std::string{r->str, r->len};
}

}  // namespace

auto node_probe::connect(const client_config& config) -> std::optional<node_probe> {
    node_probe probe;
    const timeval timeout{1, 0};
    for (const auto& address : config.nodes) {
        context c{address.is_unix()
                      ? redisConnectUnixWithTimeout(address.unix_path.c_str(), timeout)
                      : redisConnectWithTimeout(address.host.c_str(), address.port, timeout)};
        if (!c || c->err != 0) {
            std::fprintf(stderr, "session_renewal: cannot connect to %s: %s\n",
                         address.to_string().c_str(), c ? c->errstr : "out of memory");
            return std::nullopt;
        }
        redisSetTimeout(c.get(), timeval{5, 0});
        if (!config.password.empty()) {
            auto r = config.username.empty()
                         ? command(c.get(), {"AUTH", config.password.reveal()})
                         : command(c.get(), {"AUTH", config.username, config.password.reveal()});
            if (!r || r->type == REDIS_REPLY_ERROR) {
                std::fprintf(stderr, "session_renewal: AUTH failed on %s\n",
                             address.to_string().c_str());
                return std::nullopt;
            }
        }
        probe.nodes_.push_back(std::move(c));
    }
    return probe;
}

auto node_probe::read() -> std::optional<std::vector<node_figures>> {
    std::vector<node_figures> out;
    for (auto& c : nodes_) {
        const auto cpu = info(c.get(), "cpu");
        const auto stats = info(c.get(), "commandstats");
        if (!cpu || !stats) return std::nullopt;
        node_figures& node = out.emplace_back();
        node.cpu_seconds =
            std::strtod(std::string{info_field(*cpu, "used_cpu_user")}.c_str(), nullptr) +
            std::strtod(std::string{info_field(*cpu, "used_cpu_sys")}.c_str(), nullptr);
        const auto read_command = [&](std::string_view name) {
            const std::string_view line = info_field(*stats, "cmdstat_" + std::string{name});
            return command_figures{number(line, "calls"), number(line, "usec")};
        };
        node.evalsha = read_command("evalsha");
        node.eval = read_command("eval");
        node.time = read_command("time");
        // cmdstat_<name>:calls=<n>,...: every command's calls.
        const std::string_view text = *stats;
        constexpr std::string_view tag = "cmdstat_";
        for (std::size_t at = text.find(tag); at != std::string_view::npos;
             at = text.find(tag, at + 1)) {
            const std::size_t colon = text.find(':', at);
            const std::size_t end = text.find('\n', at);
            if (colon == std::string_view::npos) break;
            // Not the probe's own INFO, DBSIZE and PING.
            const std::string_view name = text.substr(at + tag.size(), colon - at - tag.size());
            if (name == "info" || name == "dbsize" || name == "ping") continue;
            node.calls += number(text.substr(colon + 1, end - colon - 1), "calls");
        }
    }
    return out;
}

auto node_probe::keys() -> std::optional<std::uint64_t> {
    std::uint64_t total = 0;
    for (auto& c : nodes_) {
        auto r = command(c.get(), {"DBSIZE"});
        if (!r || r->type != REDIS_REPLY_INTEGER) return std::nullopt;
        total += static_cast<std::uint64_t>(r->integer);
    }
    return total;
}

auto node_probe::ping() -> std::vector<double> {
    std::vector<double> out;
    for (auto& c : nodes_) {
        const auto start = std::chrono::steady_clock::now();
        auto r = command(c.get(), {"PING"});
        if (!r || r->type != REDIS_REPLY_STATUS) continue;
        out.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
    }
    return out;
}

auto node_probe::expiries(const std::string& key)
    -> std::vector<std::optional<std::chrono::steady_clock::time_point>> {
    std::vector<std::optional<std::chrono::steady_clock::time_point>> out;
    for (auto& c : nodes_) {
        const auto start = std::chrono::steady_clock::now();
        auto r = command(c.get(), {"PTTL", key});
        const auto end = std::chrono::steady_clock::now();
        if (!r || r->type != REDIS_REPLY_INTEGER || r->integer < 0) {
            out.emplace_back();
            continue;
        }
        out.emplace_back(start + (end - start) / 2 + std::chrono::milliseconds{r->integer});
    }
    return out;
}

}  // namespace redlock::bench
