#pragma once

// What the bench programs that read the nodes directly share: a hiredis
// command from string views, its reply owned, and a field of an INFO text.

#include <hiredis/hiredis.h>

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

namespace redlock::bench {

struct reply_free {
    void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_free>;

/// `argv` sent on `c` (blocking); null when the connection failed.
inline auto command(redisContext* c, std::initializer_list<std::string_view> argv) -> reply_ptr {
    std::vector<const char*> ptrs;
    std::vector<std::size_t> lens;
    for (const auto a : argv) {
        ptrs.push_back(a.data());
        lens.push_back(a.size());
    }
    return reply_ptr{static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data()))};
}

/// The value of the "name:value" line of an INFO text, or empty.
inline auto info_field(std::string_view text, std::string_view name) -> std::string_view {
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(at, end - at);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':')
            return line.substr(name.size() + 1);
        at = end + 1;
    }
    return {};
}

}  // namespace redlock::bench
