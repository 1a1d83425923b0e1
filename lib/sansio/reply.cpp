#include "sansio/reply.hpp"

namespace redlock::detail {

auto describe_reply(const reply* r) -> std::string {
    if (r == nullptr) return "no reply";
    switch (r->kind) {
        case reply_kind::error:
            return std::string{r->text};
        case reply_kind::status:
            return "status " + std::string{r->text};
        case reply_kind::string:
            return "unexpected string reply";
        case reply_kind::integer:
            return "unexpected integer " + std::to_string(r->integer);
        case reply_kind::nil:
            return "unexpected nil reply";
        case reply_kind::array:
            return "unexpected array reply";
    }
    return "unexpected reply";
}

}  // namespace redlock::detail
