#include "detail/command.hpp"

#include <array>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace redlock::detail {

void append_command(std::string& out, std::initializer_list<std::string_view> argv) {
    append_command(out, std::span<const std::string_view>{argv.begin(), argv.size()});
}

void append_command(std::string& out, std::span<const std::string_view> argv) {
    constexpr std::size_t max_args = 32;
    if (argv.size() > max_args) throw std::length_error{"too many command arguments"};
    std::array<const char*, max_args> ptrs{};
    std::array<std::size_t, max_args> lens{};
    std::size_t n = 0;
    for (const auto arg : argv) {
        ptrs[n] = arg.data();
        lens[n] = arg.size();
        ++n;
    }
    char* encoded = nullptr;
    const int len = redisFormatCommandArgv(&encoded, static_cast<int>(n), ptrs.data(), lens.data());
    if (len < 0) throw std::bad_alloc{};
    out.append(encoded, static_cast<std::size_t>(len));
    std::free(encoded);  // NOLINT: hiredis 0.14 allocates with malloc and has no redisFreeCommand
}

auto describe_reply(const redisReply* r) -> std::string {
    if (r == nullptr) return "no reply";
    switch (r->type) {
        case REDIS_REPLY_ERROR:
            return std::string{reply_text(r)};
        case REDIS_REPLY_STATUS:
            return "status " + std::string{reply_text(r)};
        case REDIS_REPLY_STRING:
            return "unexpected string reply";
        case REDIS_REPLY_INTEGER:
            return "unexpected integer " + std::to_string(r->integer);
        case REDIS_REPLY_NIL:
            return "unexpected nil reply";
        case REDIS_REPLY_ARRAY:
            return "unexpected array reply";
        default:
            return "unexpected reply type " + std::to_string(r->type);
    }
}

}  // namespace redlock::detail
