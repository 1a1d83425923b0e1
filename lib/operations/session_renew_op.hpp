#pragma once

#include "operations/operation.hpp"
#include "sansio/session_renewal.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

struct lock_state;

/// One renewal round of a session, as session_renewal.hpp decides it.
struct session_round {
    std::vector<std::shared_ptr<lock_state>> locks;  ///< in the round's order
    std::vector<session_node_reply> replies;         ///< per node
    session_round_outcome outcome;
};

/// Renews every lock of a session at once: one script call per node for up
/// to max_keys_per_call keys (larger sessions: several calls, so that a node
/// serves other clients between them and a part that fails costs only its
/// locks; each node gets them one at a time, as session_next_part decides),
/// with every key and value (session_extend_script), a NOSCRIPT fallback to EVAL,
/// and, once every node has answered (bounded by request_timeout), the keys
/// the decision puts back where they went missing. The I/O shell of
/// decide_session_round; session_keeper applies what it decided.
class session_renew_op final : public operation {
public:
    using callback = std::function<void(session_round)>;
    /// Keys per script call: a call blocks its node while it runs (about 8 µs
    /// a key here), and a round of 512 keys stays within a millisecond or two.
    static constexpr std::size_t max_keys_per_call = 512;

    session_renew_op(op_context& ctx, std::vector<std::shared_ptr<lock_state>> locks,
                     std::chrono::milliseconds ttl, callback done);

    void start() override;
    void cancel(errc) override {}  // bounded by request_timeout; let it report

private:
    enum kind : std::uint32_t { sha_kind, eval_kind, repair_kind };

    void handle(std::uint32_t tag, const reply_event& event) override;
    [[nodiscard]] static auto now() noexcept -> std::chrono::steady_clock::time_point;
    /// The call for part `part` (locks [parts_[part], parts_[part + 1])).
    [[nodiscard]] auto command(std::size_t part, bool eval) const -> encoded_command;
    /// Sends part `part` to `node`, encoded once for every node.
    void send_part(std::size_t node, std::size_t part);
    void finish();
    void repair(std::size_t lock, std::size_t node);

    std::vector<std::shared_ptr<lock_state>> locks_;
    std::chrono::milliseconds ttl_;
    std::string ttl_text_;
    callback done_;
    std::vector<std::string> keys_;       ///< every key of every lock, in order
    std::vector<std::size_t> first_key_;  ///< per lock: its first key in keys_
    std::vector<std::size_t> keys_per_lock_;
    std::vector<std::size_t> parts_;  ///< the first lock of each call, then the lock count
    std::vector<session_node_reply> replies_;
    std::vector<std::optional<encoded_command>> calls_;  ///< per part, once first sent
    std::size_t nodes_done_ = 0;  ///< nodes done with the round (session_next_part)
    std::chrono::steady_clock::time_point sent_;
};

}  // namespace redlock::detail
