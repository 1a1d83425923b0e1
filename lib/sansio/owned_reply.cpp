#include "sansio/owned_reply.hpp"

#include <cstring>

namespace redlock::detail {
namespace {

struct sizes {
    std::size_t values = 0;
    std::size_t children = 0;
    std::size_t text = 0;
};

void measure(const reply* r, sizes& s) {
    ++s.values;
    s.text += r->text.size();
    s.children += r->elements.size();
    for (const reply* e : r->elements) measure(e, s);
}

struct filler {
    std::vector<reply>& values;
    std::vector<const reply*>& children;
    char* text;

    // Copies `from` into values[at]; its children go after every value placed so far.
    void copy(const reply* from, std::size_t at, std::size_t& next_value) {
        reply& to = values[at];
        to.kind = from->kind;
        to.integer = from->integer;
        if (!from->text.empty()) {
            std::memcpy(text, from->text.data(), from->text.size());
            to.text = std::string_view{text, from->text.size()};
            text += from->text.size();
        }
        if (from->elements.empty()) return;
        const std::size_t first_child = children.size();
        const std::size_t first_value = next_value;
        next_value += from->elements.size();
        for (std::size_t i = 0; i < from->elements.size(); ++i)
            children.push_back(&values[first_value + i]);
        to.elements =
            std::span<const reply* const>{children.data() + first_child, from->elements.size()};
        for (std::size_t i = 0; i < from->elements.size(); ++i)
            copy(from->elements[i], first_value + i, next_value);
    }
};

}  // namespace

owned_reply::owned_reply(const reply* r) {
    if (r == nullptr) return;
    sizes s;
    measure(r, s);
    values_.resize(s.values);
    children_.reserve(s.children);
    text_ = std::make_unique<char[]>(s.text + 1);
    filler f{values_, children_, text_.get()};
    std::size_t next = 1;
    f.copy(r, 0, next);
}

auto replica_ack(const reply_event& wait_event, int wanted) -> replica_verdict {
    // One wording for one cause: WAIT waits as long as the request may (request_timeout),
    // so a WAIT that times out and one that answers too few both mean that the replicas
    // did not acknowledge in time (a master with fewer replicas than that, or replicas
    // down or lagging: `redlock check` tells which).
    const std::string short_of = "not all of the " + std::to_string(wanted) +
                                 " replicas wait_replicas asks for acknowledged the write in time";
    if (wait_event.status == request_status::timeout)
        return {false, short_of + " (WAIT got no answer within request_timeout_ms)"};
    if (wait_event.status != request_status::reply)
        return {false, "WAIT " + std::to_string(wanted) + " got no answer (" +
                           std::string{wait_event.cause} + ")"};
    const auto acked = integer_of(wait_event.answer);
    if (!acked)
        return {false, "WAIT " + std::to_string(wanted) + " answered " +
                           describe_reply(wait_event.answer)};
    if (*acked < wanted) return {false, short_of + " (WAIT: " + std::to_string(*acked) + ")"};
    return {true, {}};
}

}  // namespace redlock::detail
