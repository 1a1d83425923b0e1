#pragma once

// Nested replies built by hand (arrays of arrays), for the decisions that read
// structured answers: CLUSTER SLOTS, GET-MASTER-ADDR-BY-NAME. The nodes live in
// a deque, so the pointers handed out stay valid as more are added.

#include "sansio/reply.hpp"

#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

namespace redlock_test {

class reply_tree {
public:
    using reply = redlock::detail::reply;
    using kind = redlock::detail::reply_kind;

    auto string(std::string text) -> const reply* {
        texts_.push_back(std::move(text));
        return add({kind::string, 0, texts_.back(), {}});
    }
    auto integer(long long v) -> const reply* { return add({kind::integer, v, {}, {}}); }
    auto nil() -> const reply* { return add({kind::nil, 0, {}, {}}); }
    auto error(std::string text) -> const reply* {
        texts_.push_back(std::move(text));
        return add({kind::error, 0, texts_.back(), {}});
    }
    auto array(std::initializer_list<const reply*> elements) -> const reply* {
        children_.emplace_back(elements);
        const auto& c = children_.back();
        return add({kind::array, 0, {}, {c.data(), c.size()}});
    }

private:
    auto add(reply r) -> const reply* {
        nodes_.push_back(r);
        return &nodes_.back();
    }
    std::deque<reply> nodes_;
    std::deque<std::string> texts_;
    std::deque<std::vector<const reply*>> children_;
};

}  // namespace redlock_test
