#include "cli_stress_argv.hpp"

namespace redlock_torture {

namespace fs = std::filesystem;

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
