#include "load/node_stats.hpp"

#include "hiredis_commands.hpp"
#include "sansio/scripts.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace redlock::bench {

auto node_stats::connect(const client_config& config) -> std::optional<node_stats> {
    node_stats stats;
    const timeval timeout{1, 0};
    for (const auto& address : config.nodes) {
        context c{address.is_unix()
                      ? redisConnectUnixWithTimeout(address.unix_path.c_str(), timeout)
                      : redisConnectWithTimeout(address.host.c_str(), address.port, timeout)};
        if (!c || c->err != 0) {
            std::fprintf(stderr, "redlock_load: cannot connect to %s: %s\n",
                         address.to_string().c_str(), c ? c->errstr : "out of memory");
            return std::nullopt;
        }
        redisSetTimeout(c.get(), timeval{5, 0});
        if (!config.password.empty()) {
            auto r = config.username.empty()
                         ? command(c.get(), {"AUTH", config.password.reveal()})
                         : command(c.get(), {"AUTH", config.username, config.password.reveal()});
            if (!r || r->type == REDIS_REPLY_ERROR) {
                std::fprintf(stderr, "redlock_load: AUTH failed on %s\n",
                             address.to_string().c_str());
                return std::nullopt;
            }
        }
        stats.nodes_.push_back(std::move(c));
        stats.names_.push_back(address.to_string());
    }
    return stats;
}

auto node_stats::info(redisContext* c, const char* section) -> std::string {
    auto r = command(c, {"INFO", section});
    if (!r || r->type != REDIS_REPLY_STRING) return {};
    return {r->str, r->len};
}

auto node_stats::snapshot() -> server_snapshot {
    server_snapshot s;
    for (auto& c : nodes_) {
        node_snapshot& node = s.nodes.emplace_back();
        const std::string stats = info(c.get(), "commandstats");
        std::string_view text = stats;
        // cmdstat_<name>:calls=<n>,usec=...
        constexpr std::string_view tag = "cmdstat_";
        for (std::size_t at = text.find(tag); at != std::string_view::npos;
             at = text.find(tag, at + 1)) {
            const std::size_t colon = text.find(':', at);
            const std::size_t calls = text.find("calls=", colon);
            if (colon == std::string_view::npos || calls == std::string_view::npos) break;
            const std::string name{text.substr(at + tag.size(), colon - at - tag.size())};
            node.calls[name] = std::strtoull(text.data() + calls + 6, nullptr, 10);
            s.calls[name] += node.calls[name];
        }
        const std::string cpu = info(c.get(), "cpu");
        node.cpu_seconds =
            std::strtod(std::string{info_field(cpu, "used_cpu_user")}.c_str(), nullptr) +
            std::strtod(std::string{info_field(cpu, "used_cpu_sys")}.c_str(), nullptr);
        s.cpu_seconds += node.cpu_seconds;
    }
    return s;
}

auto node_stats::load_scripts() -> bool {
    for (auto& c : nodes_) {
        for (const detail::script* s : detail::all_scripts()) {
            auto r = command(c.get(), {"SCRIPT", "LOAD", s->source});
            if (!r || r->type != REDIS_REPLY_STRING || std::string_view{r->str, r->len} != s->sha) {
                std::fprintf(stderr, "redlock_load: SCRIPT LOAD failed: %s\n",
                             r && r->str != nullptr ? r->str : "no reply");
                return false;
            }
        }
    }
    return true;
}

auto node_stats::redis_version() -> std::string {
    if (nodes_.empty()) return {};
    return std::string{info_field(info(nodes_.front().get(), "server"), "redis_version")};
}

}  // namespace redlock::bench
