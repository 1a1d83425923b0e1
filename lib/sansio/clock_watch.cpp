#include "sansio/clock_watch.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace redlock::detail {

using std::chrono::microseconds;
using std::chrono::milliseconds;

auto judge_clock(const clock_sample& previous, const clock_sample& current,
                 const clock_budget& budget) -> clock_verdict {
    // The local time between the node's two readings, at most and at least.
    const auto most = std::chrono::duration_cast<microseconds>(current.received - previous.sent);
    const auto least = std::chrono::duration_cast<microseconds>(current.sent - previous.received);
    const microseconds node_elapsed{current.node_us - previous.node_us};
    // The drift every validity is already shortened by, over this interval:
    // the factor on the longest the interval can have been, and the floor.
    const double prorated = std::ceil(std::chrono::duration<double, std::milli>(most).count() *
                                      std::max(budget.drift_factor, 0.0));
    const milliseconds allowance = milliseconds{static_cast<milliseconds::rep>(prorated)} +
                                   std::max(budget.floor, milliseconds{0});
    clock_verdict v{.result = clock_verdict::kind::fine, .allowance = allowance};
    if (node_elapsed > most + allowance) {
        v.result = clock_verdict::kind::forward;
        v.step = std::chrono::duration_cast<milliseconds>(node_elapsed - most);
    } else if (node_elapsed < least - allowance) {
        v.result = clock_verdict::kind::backward;
        v.step = std::chrono::duration_cast<milliseconds>(least - node_elapsed);
    }
    return v;
}

auto clock_step_note::describe() const -> std::string {
    return "its clock stepped " + std::to_string(verdict.step.count()) + " ms " +
           (verdict.result == clock_verdict::kind::forward ? "forward" : "backward");
}

auto clock_watch::observe(const clock_sample& s, const clock_budget& budget) -> clock_verdict {
    if (s.received < s.sent) return {.result = clock_verdict::kind::fine};
    if (!reference_) {
        reference_ = s;
        return {};
    }
    // Out of order (a late answer to an older probe): it says nothing new.
    if (s.received < reference_->received) return {.result = clock_verdict::kind::fine};
    const clock_verdict v = judge_clock(*reference_, s, budget);
    reference_ = s;
    return v;
}

auto time_reply_us(std::string_view seconds, std::string_view micros)
    -> std::optional<std::int64_t> {
    const auto number = [](std::string_view text) -> std::optional<std::int64_t> {
        std::int64_t n = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n < 0)
            return std::nullopt;
        return n;
    };
    const auto s = number(seconds);
    const auto us = number(micros);
    // Redis answers microseconds below a second; anything else is not TIME.
    if (!s || !us || *us >= 1'000'000 ||
        *s > (std::numeric_limits<std::int64_t>::max() - *us) / 1'000'000)
        return std::nullopt;
    return *s * 1'000'000 + *us;
}

auto info_time_us(std::string_view usec) -> std::optional<std::int64_t> {
    // The same number as TIME's two parts, written as one: split it so both are read alike.
    constexpr std::size_t digits = 6;
    if (usec.size() <= digits) return time_reply_us("0", usec);
    return time_reply_us(usec.substr(0, usec.size() - digits), usec.substr(usec.size() - digits));
}

auto time_of(const reply* r) -> std::optional<std::int64_t> {
    if (!is_array(r, 2)) return std::nullopt;
    return time_reply_us(reply_text(r->elements[0]), reply_text(r->elements[1]));
}

}  // namespace redlock::detail
