#include "detail/command.hpp"

#include <array>
#include <new>
#include <vector>

namespace redlock::detail {

encoded_command::encoded_command(std::span<const std::string_view> argv) {
    // Common commands fit on the stack; a lock over many resources does not.
    constexpr std::size_t on_stack = 16;
    std::array<const char*, on_stack> ptr_buf{};
    std::array<std::size_t, on_stack> len_buf{};
    std::vector<const char*> ptr_heap;
    std::vector<std::size_t> len_heap;
    const char** ptrs = ptr_buf.data();
    std::size_t* lens = len_buf.data();
    if (argv.size() > on_stack) {
        ptr_heap.resize(argv.size());
        len_heap.resize(argv.size());
        ptrs = ptr_heap.data();
        lens = len_heap.data();
    }
    for (std::size_t i = 0; i < argv.size(); ++i) {
        ptrs[i] = argv[i].data();
        lens[i] = argv[i].size();
    }
    // The sds variant: one allocation of the exact size, and hiredis's own
    // integer formatting instead of sprintf (about twice as fast).
    sds encoded = nullptr;
    const int len = redisFormatSdsCommandArgv(&encoded, static_cast<int>(argv.size()), ptrs, lens);
    if (len < 0) throw std::bad_alloc{};
    data_ = encoded;
    size_ = static_cast<std::size_t>(len);
}

encoded_command::~encoded_command() {
    if (data_ != nullptr) redisFreeSdsCommand(data_);
}

void append_command(std::string& out, std::initializer_list<std::string_view> argv) {
    out.append(encoded_command{argv}.bytes());
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
