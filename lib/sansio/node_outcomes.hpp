#pragma once

#include "redlock/error.hpp"
#include "sansio/command.hpp"
#include "sansio/reply.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::detail {

/// What one node said to a request: the status, and why when it is not plain.
struct node_outcome {
    node_status status = node_status::cancelled;
    std::string detail;
};

/// What a request that did not succeed tells of its node: the transport's
/// cause (timeout, unreachable, stopped), or the node's unexpected reply.
[[nodiscard]] inline auto failed_outcome(const reply_event& event) -> node_outcome {
    switch (event.status) {
        case request_status::timeout:
            return {node_status::timeout, std::string{event.cause}};
        case request_status::unreachable:
            return {node_status::unreachable, std::string{event.cause}};
        case request_status::stopped:
            return {node_status::cancelled, std::string{event.cause}};
        case request_status::reply:
            break;
    }
    return {node_status::error, describe_reply(event.answer)};
}

/// What every node said to one round of an operation, kept compactly: a
/// status byte per node, and detail texts only once some node has one (the
/// success path stores none). A thousand operations in flight hold a thousand
/// of these, so the node_report vector users see is built only when asked for.
class node_outcomes {
public:
    /// Every node back to `initial` ("no answer").
    void reset(std::size_t nodes, node_status initial = node_status::cancelled) {
        size_ = nodes;
        spilled_.reset();
        if (nodes > inline_nodes) spilled_ = std::make_unique<node_status[]>(nodes);
        std::fill_n(statuses(), nodes, initial);
        details_.reset();
    }
    /// Drops what was stored (the operation no longer needs it).
    void release_memory() noexcept {
        size_ = 0;
        spilled_.reset();
        details_.reset();
    }
    void set(std::size_t node, node_outcome outcome) {
        statuses()[node] = outcome.status;
        if (details_ == nullptr) {
            if (outcome.detail.empty()) return;
            details_ = std::make_unique<std::string[]>(size_);
        }
        details_[node] = std::move(outcome.detail);
    }

    [[nodiscard]] auto size() const noexcept -> std::size_t { return size_; }
    [[nodiscard]] auto status(std::size_t node) const noexcept -> node_status {
        return statuses()[node];
    }
    [[nodiscard]] auto detail(std::size_t node) const -> std::string_view {
        if (details_ != nullptr && !details_[node].empty()) return details_[node];
        switch (status(node)) {
            case node_status::cancelled:
                return "no answer";
            case node_status::pending:
                return "no answer yet when decided; its late outcome is counted in client_stats";
            default:
                return {};
        }
    }
    [[nodiscard]] auto count(node_status s) const noexcept -> std::size_t {
        return static_cast<std::size_t>(std::count(statuses(), statuses() + size_, s));
    }
    /// Appends "; <node> <status>[: <detail>]" for every node that did not say ok.
    template <class NameOf>
    void append_problems(std::string& text, NameOf&& name_of) const {
        for (std::size_t i = 0; i < size_; ++i) {
            if (status(i) == node_status::ok) continue;
            text += "; " + std::string{name_of(i)} + " " + to_string(status(i));
            if (!detail(i).empty()) text.append(": ").append(detail(i));
        }
    }
    /// The reports as users see them; `name_of(i)` names node i.
    template <class NameOf>
    [[nodiscard]] auto to_reports(NameOf&& name_of) const -> std::vector<node_report> {
        std::vector<node_report> reports;
        reports.reserve(size_);
        for (std::size_t i = 0; i < size_; ++i)
            reports.push_back(node_report{name_of(i), status(i), std::string{detail(i)}});
        return reports;
    }

private:
    // The usual 3, 5 or 7 nodes fit inline: no allocation per operation.
    static constexpr std::size_t inline_nodes = 8;

    [[nodiscard]] auto statuses() noexcept -> node_status* {
        return spilled_ ? spilled_.get() : inline_.data();
    }
    [[nodiscard]] auto statuses() const noexcept -> const node_status* {
        return spilled_ ? spilled_.get() : inline_.data();
    }

    std::array<node_status, inline_nodes> inline_{};
    std::size_t size_ = 0;
    std::unique_ptr<node_status[]> spilled_;  // more nodes than inline_ holds
    std::unique_ptr<std::string[]> details_;  // one per node, once any has a detail
};

}  // namespace redlock::detail
