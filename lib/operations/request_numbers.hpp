#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace redlock::detail {

/// One request number per node (an attempt's grant on each), so that a
/// decided acquisition can disown the requests still unanswered. The usual 3,
/// 5 or 7 nodes, up to 8, fit inline: no allocation; more nodes cost one
/// allocation per acquisition, and every node is covered whatever the count.
class request_numbers {
public:
    explicit request_numbers(std::size_t nodes)
        : spilled_{nodes > inline_nodes ? std::make_unique<std::uint32_t[]>(nodes) : nullptr} {}

    void set(std::size_t node, std::uint32_t number) noexcept { data()[node] = number; }
    [[nodiscard]] auto operator[](std::size_t node) const noexcept -> std::uint32_t {
        return spilled_ ? spilled_[node] : inline_[node];
    }

private:
    static constexpr std::size_t inline_nodes = 8;

    [[nodiscard]] auto data() noexcept -> std::uint32_t* {
        return spilled_ ? spilled_.get() : inline_.data();
    }

    std::array<std::uint32_t, inline_nodes> inline_{};
    std::unique_ptr<std::uint32_t[]> spilled_;  // more nodes than inline_ holds
};

}  // namespace redlock::detail
