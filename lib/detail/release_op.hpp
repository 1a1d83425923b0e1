#pragma once

#include "detail/node_outcomes.hpp"
#include "detail/operation.hpp"
#include "redlock/client.hpp"

#include <memory>
#include <string>

namespace redlock::detail {

struct lock_state;

/// Compare-and-delete on every node (EVALSHA, falling back to EVAL when a node
/// does not have the script cached). Waits for every node, because the report
/// counts how many actually deleted the key.
class release_op final : public operation {
public:
    release_op(client_core& core, std::shared_ptr<lock_state> state, client::release_callback done);

    void start() override;
    void cancel(errc why) override;

private:
    enum kind : std::uint32_t { sha_kind = 0, eval_kind = 1 };

    void handle(std::uint32_t tag, const reply_event& event) override;
    void send_release(std::size_t node, bool eval);
    void finish();

    std::shared_ptr<lock_state> state_;
    client::release_callback done_;
    node_outcomes outcomes_;  // the report is built from these when every node answered
    std::size_t answered_ = 0;
    std::size_t deleted_ = 0;
};

}  // namespace redlock::detail
