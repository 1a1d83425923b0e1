#include "detail/scripts.hpp"

#include "detail/sha1.hpp"

#include <array>

namespace redlock::detail {
namespace {

auto make(std::string_view source) -> script {
    return script{source, sha1_hex(source)};
}

constexpr std::string_view release_source =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
    "  return redis.call('DEL', KEYS[1])\n"
    "end\n"
    "return 0\n";

}  // namespace

auto release_script() -> const script& {
    static const script s = make(release_source);
    return s;
}

auto all_scripts() -> std::span<const script* const> {
    static const script* const scripts[] = {&release_script()};
    return scripts;
}

}  // namespace redlock::detail
