#pragma once

#include "operations/operation.hpp"
#include "sansio/lock_listing.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace redlock::detail {

/// What client::list asks of every node (list_options, checked and filled in).
struct list_request {
    std::string key_prefix;
    std::string fence_prefix;
    std::string resource_prefix;
    std::size_t limit = 0;
    std::size_t batch = 0;  ///< SCAN's COUNT
    std::chrono::milliseconds budget{0};
};

/// Walks every node's keyspace with SCAN (MATCH listing_pattern), each node at
/// its own pace: a round's keys are read by one read-only script while the
/// next SCAN is already on its way. A node stops at the end of its keyspace,
/// at the limit, once the budget is spent (no new round starts), or at its
/// first failure. The plumbing of client::list; what the rounds decide is
/// sansio/lock_listing's. Waits for every node, each request bounded by
/// request_timeout.
class list_op final : public operation {
public:
    using callback = std::function<void(std::vector<node_scan>)>;

    list_op(op_context& ctx, list_request request, callback done);

    void start() override;
    void cancel(errc) override {}  // bounded by the budget and request_timeout; let it report

private:
    struct progress {
        std::string cursor{"0"};
        std::size_t in_flight = 0;
        bool scanning = true;      // a SCAN is in flight
        bool reached_end = false;  // a page came back with cursor 0
        bool failed = false;
        bool settled = false;
        std::uint32_t next_read = 0;
        std::map<std::uint32_t, read_batch> reads;  // in flight, by number
    };

    void handle(std::uint32_t tag, const reply_event& event) override;
    void send_scan(std::size_t node);
    void on_page(std::size_t node, const reply_event& event);
    void on_read(std::size_t node, std::uint32_t number, const reply_event& event);
    void fail(std::size_t node, std::string why);
    [[nodiscard]] static auto now() noexcept -> std::chrono::steady_clock::time_point;

    list_request request_;
    std::string pattern_;
    callback done_;
    std::vector<node_scan> scans_;
    std::vector<progress> progress_;
    std::size_t settled_ = 0;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace redlock::detail
