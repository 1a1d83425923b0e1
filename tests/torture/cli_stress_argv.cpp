#include "cli_stress_argv.hpp"

namespace redlock_torture {

namespace fs = std::filesystem;

auto snapshot(const binaries& from, const fs::path& dir) -> binaries {
    binaries copies{dir / "redlock", dir / "section"};
    fs::copy_file(from.cli, copies.cli, fs::copy_options::overwrite_existing);
    fs::copy_file(from.section, copies.section, fs::copy_options::overwrite_existing);
    return copies;
}

auto config_json(const std::vector<redlock_test::fault_proxy>& proxies, int ttl_ms,
                 const std::string& wait_mode) -> std::string {
    std::string nodes;
    for (const auto& p : proxies) {
        nodes += std::string{nodes.empty() ? "" : ", "} + R"({"host": "127.0.0.1", "port": )" +
                 std::to_string(p.port()) + "}";
    }
    return R"({"nodes": [)" + nodes + R"(],
 "connect_timeout_ms": 200, "request_timeout_ms": 100,
 "lock": {"ttl_ms": )" +
           std::to_string(ttl_ms) + (wait_mode.empty() ? "" : R"(, "wait": ")" + wait_mode + "\"") +
           R"(},
 "retry": {"attempts": 3, "delay_ms": 50, "jitter_ms": 50},
 "reconnect": {"min_delay_ms": 20, "max_delay_ms": 200}}
)";
}

auto invocation_argv(const binaries& bin, const fs::path& config, const fs::path& sections,
                     const std::string& resource, const invocation_plan& plan)
    -> std::vector<std::string> {
    const bool permit = plan.kind == hold_kind::permit;
    std::vector<std::string> argv{bin.cli.string(), "--config",
                                  config.string(),  "run",
                                  "--resource",     permit ? resource + "-pool" : resource};
    if (plan.kind == hold_kind::reader) argv.emplace_back("--shared");
    if (plan.fair) argv.emplace_back("--fair");
    if (permit) {
        argv.insert(argv.end(), {"--permits", std::to_string(cli_stress_permits)});
    } else {
        argv.emplace_back("--fence");
    }
    argv.insert(argv.end(),
                {"--ttl-ms", std::to_string(plan.ttl_ms), "--wait-ms", std::to_string(plan.wait_ms),
                 "--", bin.section.string(), sections.string(), std::to_string(plan.id),
                 std::to_string(plan.duration_ms), kind_name(plan.kind)});
    return argv;
}

auto elect_argv(const binaries& bin, const fs::path& config, const fs::path& sections,
                const std::string& election, const invocation_plan& plan)
    -> std::vector<std::string> {
    return {bin.cli.string(),
            "--config",
            config.string(),
            "elect",
            "--name",
            election,
            "--ttl-ms",
            std::to_string(plan.ttl_ms),
            "--wait-ms",
            std::to_string(plan.wait_ms),
            "--",
            bin.section.string(),
            sections.string(),
            std::to_string(plan.id),
            std::to_string(plan.duration_ms),
            "leader"};
}

auto kind_of_draw(int draw) noexcept -> hold_kind {
    switch (draw) {
        case 2:
            return hold_kind::reader;
        case 3:
            return hold_kind::permit;
        default:
            return hold_kind::writer;
    }
}

}  // namespace redlock_torture
