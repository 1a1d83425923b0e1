#include "operations/list_op.hpp"

#include "operations/op_context.hpp"
#include "sansio/command.hpp"
#include "sansio/reply.hpp"

#include <string_view>
#include <utility>

namespace redlock::detail {
namespace {

// Read batches are numbered in the tag's attempt field (20 bits).
constexpr std::uint32_t read_numbers = 1U << 20;
constexpr std::uint32_t scan_kind = 0;
constexpr std::uint32_t read_kind = 1;

}  // namespace

list_op::list_op(op_context& ctx, list_request request, callback done)
    : operation{ctx},
      request_{std::move(request)},
      pattern_{listing_pattern(request_.key_prefix, request_.resource_prefix)},
      done_{std::move(done)} {}

// The one place this shell reads the clock.
auto list_op::now() noexcept -> std::chrono::steady_clock::time_point {
    return std::chrono::steady_clock::now();
}

void list_op::start() {
    const std::size_t n = ctx_.node_count();
    scans_.resize(n);
    progress_.resize(n);
    start_ = now();
    if (n == 0) {
        finished_ = true;
        after(std::chrono::milliseconds{0}, [this] { deliver(done_, std::move(scans_)); });
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        scans_[i].node = ctx_.node(i).name().str();
        send_scan(i);
    }
}

void list_op::send_scan(std::size_t node) {
    const std::string count = std::to_string(request_.batch);
    const encoded_command scan{"SCAN", progress_[node].cursor, "MATCH", pattern_, "COUNT", count};
    ++progress_[node].in_flight;
    ++scans_[node].rounds;
    send(node, scan, make_tag(0, scan_kind, node));
}

void list_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t node = tag_node(tag);
    progress& p = progress_[node];
    --p.in_flight;
    if (tag_kind(tag) == scan_kind) {
        p.scanning = false;
        on_page(node, event);
    } else {
        on_read(node, tag_attempt(tag), event);
    }
    if (p.settled || p.scanning || p.in_flight > 0) return;
    p.settled = true;
    scans_[node].complete = p.reached_end && !p.failed;
    if (++settled_ < scans_.size()) return;
    finished_ = true;
    deliver(done_, std::move(scans_));
}

void list_op::on_page(std::size_t node, const reply_event& event) {
    progress& p = progress_[node];
    node_scan& scan = scans_[node];
    if (event.status != request_status::reply) {
        fail(node, std::string{event.cause});
        return;
    }
    if (is_error(event.answer)) {
        fail(node, std::string{reply_text(event.answer)});
        return;
    }
    auto page = parse_scan_page(event.answer);
    if (!page) {
        fail(node, "an unexpected reply to SCAN: " + describe_reply(event.answer));
        return;
    }
    scan.reachable = true;
    const bool budget_spent = now() - start_ >= request_.budget;
    scan_step step = next_scan_step(*page, request_.key_prefix, request_.resource_prefix, scan.keys,
                                    request_.limit, budget_spent);
    scan.keys += step.batch.keys.size();
    if (!step.batch.keys.empty()) {
        const std::vector<std::string> command = read_command(step.batch, request_.fence_prefix);
        const std::vector<std::string_view> argv{command.begin(), command.end()};
        const std::uint32_t number = p.next_read++ % read_numbers;
        p.reads[number] = std::move(step.batch);
        ++p.in_flight;
        send(node, encoded_command{argv}, make_tag(number, read_kind, node));
    }
    if (p.failed) return;  // a read failed meanwhile: the node's listing is partial already
    switch (step.stopped) {
        case scan_stop::limit:
            fail(node, "stopped at the limit of " + std::to_string(request_.limit) + " keys");
            return;
        case scan_stop::budget:
            fail(node, "stopped when the time budget of " +
                           std::to_string(request_.budget.count()) + " ms was spent");
            return;
        case scan_stop::none:
            break;
    }
    if (step.more) {
        p.cursor = std::move(page->cursor);
        p.scanning = true;
        send_scan(node);
    } else {
        p.reached_end = true;
    }
}

void list_op::on_read(std::size_t node, std::uint32_t number, const reply_event& event) {
    progress& p = progress_[node];
    const auto batch = p.reads.find(number);
    if (batch == p.reads.end()) return;  // cannot happen: every read is numbered once
    const read_batch keys = std::move(batch->second);
    p.reads.erase(batch);
    if (event.status != request_status::reply) {
        fail(node, std::string{event.cause});
    } else if (is_error(event.answer)) {
        fail(node, std::string{reply_text(event.answer)});
    } else if (auto readings = parse_read_reply(keys, event.answer)) {
        auto& into = scans_[node].readings;
        into.insert(into.end(), std::make_move_iterator(readings->begin()),
                    std::make_move_iterator(readings->end()));
    } else {
        fail(node,
             "an unexpected reply to the listing's read script: " + describe_reply(event.answer));
    }
}

void list_op::fail(std::size_t node, std::string why) {
    progress& p = progress_[node];
    if (!p.failed) scans_[node].detail = std::move(why);
    p.failed = true;
}

}  // namespace redlock::detail
