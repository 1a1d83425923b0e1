#pragma once

#include "operations/operation.hpp"
#include "redlock/diagnostics.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

/// A reply copied out of the reader's value, so it can outlive the callback.
struct flat_reply {
    enum class kind { nil, integer, text, error, array };
    kind type = kind::nil;
    long long integer = 0;
    std::string text;
    std::vector<flat_reply> elements;
};

/// `r` (null: nil) as a flat_reply, its elements copied too.
[[nodiscard]] auto flatten(const reply* r) -> flat_reply;

/// What one node answered to every command of a probe.
struct node_probe {
    std::string node;
    bool answered = false;  ///< every command got a reply (possibly an error reply)
    std::string cause;      ///< why not, otherwise
    std::vector<flat_reply> replies;
    std::chrono::microseconds round_trip{0};  ///< to the first reply
    std::vector<std::string> topology;        ///< a cluster or Sentinel member's (node_health)
    /// The TLS session of the connection serving the probe's slot when the
    /// last answer came; nothing over plain text (node_health::tls).
    std::optional<tls_info> tls;
};

/// Sends the same few read-only commands to every node and collects what each
/// answered: the plumbing of client::status and client::check. Waits for every
/// node (bounded by request_timeout), since the point is to report each one.
class probe_op final : public operation {
public:
    using callback = std::function<void(std::vector<node_probe>)>;

    /// `slot`: where the commands' keys hash (a cluster member sends them to its master).
    probe_op(op_context& ctx, std::vector<std::vector<std::string>> commands, callback done,
             std::uint16_t slot = 0);

    void start() override;
    void cancel(errc) override {}  // bounded by request_timeout; let it report

private:
    void handle(std::uint32_t tag, const reply_event& event) override;
    [[nodiscard]] static auto now() noexcept -> std::chrono::steady_clock::time_point;

    std::vector<std::vector<std::string>> commands_;
    callback done_;
    std::vector<node_probe> probes_;
    std::vector<std::size_t> answers_;  // per node
    std::size_t complete_ = 0;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace redlock::detail
