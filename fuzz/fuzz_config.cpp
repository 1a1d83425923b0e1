// redlock::parse_config on arbitrary text. Beyond the sanitizers, it checks that
//  - no input reaches parse_config's catch-all ("internal error": an exception escaped the
//    reader, e.g. a JSON value read as the wrong type);
//  - every error names the source, and says what is wrong;
//  - whatever parses also passes validate_config (parsing validates, so they must agree).

#include <redlock/config.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // Configs with "auth": {"password_env": "REDLOCK_FUZZ_PASSWORD"} can then parse.
    setenv("REDLOCK_FUZZ_PASSWORD", "fuzz-secret", 1);  // NOLINT(concurrency-mt-unsafe)
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text{reinterpret_cast<const char*>(data), size};
    auto parsed = redlock::parse_config(text, "fuzz.json");
    if (!parsed) {
        const redlock::config_error& e = parsed.error();
        if (e.message.starts_with("internal error")) __builtin_trap();
        if (e.file != "fuzz.json" || e.message.empty()) __builtin_trap();
        if (!e.what().starts_with("fuzz.json")) __builtin_trap();
        return 0;
    }
    if (redlock::validate_config(*parsed, "fuzz.json")) __builtin_trap();
    for (const auto& node : parsed->nodes) {
        if (node.host.empty() == node.unix_path.empty()) __builtin_trap();
        (void)node.to_string();
    }
    // The password is read from the environment, never from the text.
    if (!parsed->password.empty() && parsed->password.reveal() != "fuzz-secret") __builtin_trap();
    return 0;
}
