#include "detail/operation.hpp"

#include "detail/client_core.hpp"
#include "detail/guarded.hpp"
#include "detail/scripts.hpp"

#include <string>
#include <vector>

namespace redlock::detail {

void operation::send(std::size_t node, std::initializer_list<std::string_view> argv,
                     std::uint32_t tag) {
    ++outstanding_;
    core_.node(node).send(std::span<const std::string_view>{argv.begin(), argv.size()}, this, tag);
}

void operation::send_script(std::size_t node, const script& s, bool eval,
                            std::span<const std::string_view> keys,
                            std::initializer_list<std::string_view> args, std::uint32_t tag) {
    std::vector<std::string_view> argv(3 + keys.size() + args.size());
    const std::string key_count = std::to_string(keys.size());
    std::size_t n = 0;
    argv[n++] = eval ? "EVAL" : "EVALSHA";
    argv[n++] = eval ? s.source : std::string_view{s.sha};
    argv[n++] = key_count;
    for (const auto k : keys) argv[n++] = k;
    for (const auto a : args) argv[n++] = a;
    ++outstanding_;
    core_.node(node).send(argv, this, tag);
}

void operation::on_reply(std::uint32_t tag, const reply_event& event) noexcept {
    --outstanding_;
    // A throwing user callback must not cross into libuv; the operation still
    // completes, as its remaining requests keep arriving.
    call_guarded([&] { handle(tag, event); });
    maybe_retire();
}

void operation::maybe_retire() noexcept {
    if (finished_ && outstanding_ == 0 && !timer_pending_) core_.retire(this);
}

}  // namespace redlock::detail
