// The Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): one HELP
// and one TYPE line per metric family, then its samples; a histogram's
// buckets are cumulative and end with le="+Inf", which equals its _count.
#include "redlock/metrics.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace redlock {
namespace {

/// A metric name may hold [a-zA-Z0-9_:] and not start with a digit.
auto sanitized(std::string_view prefix) -> std::string {
    std::string out;
    out.reserve(prefix.size() + 1);
    for (const char c : prefix) {
        const bool letter =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        const bool digit = c >= '0' && c <= '9';
        out += (letter || (digit && !out.empty())) ? c : '_';
    }
    if (!out.empty()) out += '_';
    return out;
}

/// Label values escape backslash, double quote and line feed.
void append_label_value(std::string& out, std::string_view value) {
    for (const char c : value) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
}

/// std::to_chars of `v` appended: a double in the shortest text that reads back
/// as the same value, or as `format` says; an integer in decimal.
template <typename Number, typename... Format>
void append_number(std::string& out, Number v, Format... format) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, format...);
    out.append(buf, r.ptr);
}

struct label {
    std::string_view name;
    std::string_view value;
};

class writer {
public:
    explicit writer(std::string_view prefix) : prefix_{sanitized(prefix)} {}

    /// The HELP and TYPE lines of a family (help texts hold no '\' or newline).
    void family(std::string_view name, std::string_view type, std::string_view help) {
        out_ += "# HELP ";
        name_into(name);
        out_ += ' ';
        out_ += help;
        out_ += "\n# TYPE ";
        name_into(name);
        out_ += ' ';
        out_ += type;
        out_ += '\n';
    }

    template <typename Number>
    void sample(std::string_view name, std::initializer_list<label> labels, Number value) {
        sample(name, std::span{labels.begin(), labels.size()}, value);
    }

    template <typename Number>
    void sample(std::string_view name, std::span<const label> labels, Number value) {
        name_into(name);
        if (labels.size() != 0) {
            out_ += '{';
            bool first = true;
            for (const label& l : labels) {
                if (!first) out_ += ',';
                first = false;
                out_ += l.name;
                out_ += "=\"";
                append_label_value(out_, l.value);
                out_ += '"';
            }
            out_ += '}';
        }
        out_ += ' ';
        append_number(out_, value);
        out_ += '\n';
    }

    /// One histogram series: cumulative buckets, +Inf, _sum and _count, each
    /// with the `extra` label first when there is one.
    void histogram(std::string_view name, const histogram_snapshot& h, const label* extra) {
        std::array<label, 2> labels{};
        const std::size_t own = extra != nullptr ? 1 : 0;  // labels before "le"
        if (extra != nullptr) labels[0] = *extra;
        const std::string bucket = std::string{name} + "_bucket";
        std::uint64_t cumulative = 0;
        std::string le;
        for (std::size_t i = 0; i <= latency_buckets.size(); ++i) {
            cumulative += h.counts[i];
            le.clear();
            if (i < latency_buckets.size()) {
                // As people write it, never in exponent form ("0.0001", not
                // "1e-04"): queries match `le` as a string.
                append_number(le, latency_buckets[i], std::chars_format::fixed);
            } else {
                le = "+Inf";
            }
            labels[own] = {"le", le};
            sample(bucket, std::span{labels.data(), own + 1}, cumulative);
        }
        const std::span<const label> series{labels.data(), own};
        sample(std::string{name} + "_sum", series, h.sum_seconds);
        sample(std::string{name} + "_count", series, cumulative);
    }

    [[nodiscard]] auto take() -> std::string { return std::move(out_); }

private:
    void name_into(std::string_view name) {
        out_ += prefix_;
        out_ += name;
    }

    std::string prefix_;
    std::string out_;
};

}  // namespace

auto to_string(acquire_outcome o) noexcept -> std::string_view {
    switch (o) {
        case acquire_outcome::ok:
            return "ok";
        case acquire_outcome::contended:
            return "contended";
        case acquire_outcome::unreachable:
            return "unreachable";
        case acquire_outcome::other:
            break;
    }
    return "other";
}

auto to_prometheus(const metrics_snapshot& m, std::string_view prefix) -> std::string {
    writer w{prefix};

    w.family("acquire_duration_seconds", "histogram",
             "Time from an acquisition's first attempt to its result, by outcome.");
    for (std::size_t i = 0; i < m.acquire.size(); ++i) {
        const label outcome{"outcome", to_string(static_cast<acquire_outcome>(i))};
        w.histogram("acquire_duration_seconds", m.acquire[i], &outcome);
    }
    w.family("release_duration_seconds", "histogram",
             "Time from sending a release to its report (a majority deleted, or none can).");
    w.histogram("release_duration_seconds", m.release, nullptr);
    w.family("extend_duration_seconds", "histogram",
             "Time from sending an extend (renewals included) to its result.");
    w.histogram("extend_duration_seconds", m.extend, nullptr);
    w.family("wait_duration_seconds", "histogram",
             "Time acquisitions refused at their first attempt took to their result.");
    w.histogram("wait_duration_seconds", m.wait, nullptr);

    w.family("node_up", "gauge", "1 if the node is connected and past its handshake, else 0.");
    for (const auto& n : m.nodes)
        w.sample("node_up", {{"node", n.node}}, std::uint64_t{n.up ? 1U : 0U});
    w.family("node_rtt_seconds", "gauge",
             "Smoothed round-trip time of lock commands (0 before the first sample).");
    for (const auto& n : m.nodes) w.sample("node_rtt_seconds", {{"node", n.node}}, n.rtt_seconds);
    w.family("node_errors_total", "counter",
             "Requests to the node that failed, by kind: timeout, unreachable, error_reply.");
    for (const auto& n : m.nodes) {
        w.sample("node_errors_total", {{"node", n.node}, {"kind", "timeout"}}, n.timeouts);
        w.sample("node_errors_total", {{"node", n.node}, {"kind", "unreachable"}}, n.unreachable);
        w.sample("node_errors_total", {{"node", n.node}, {"kind", "error_reply"}}, n.error_replies);
    }
    w.family("node_connects_total", "counter",
             "Connections to the node established (handshake answered).");
    for (const auto& n : m.nodes) w.sample("node_connects_total", {{"node", n.node}}, n.connects);
    w.family("node_clock_steps_total", "counter",
             "Steps of the node's clock seen (TIME against the local monotonic clock); each "
             "quarantined the node.");
    for (const auto& n : m.nodes)
        w.sample("node_clock_steps_total", {{"node", n.node}}, n.clock_steps);
    w.family("node_grants_missed_total", "counter",
             "Locks granted without the node: its grant failed (error, timeout, not reachable) "
             "while a majority granted.");
    for (const auto& n : m.nodes)
        w.sample("node_grants_missed_total", {{"node", n.node}}, n.grants_missed);

    w.family("locks_held", "gauge", "Locks granted and not yet released, lost or dropped.");
    w.sample("locks_held", {}, m.locks_held);
    w.family("waiters", "gauge", "Acquisitions waiting for a release notification.");
    w.sample("waiters", {}, std::uint64_t{m.waiters});
    w.family("acquire_attempts_total", "counter", "Acquisition attempts (rounds of requests).");
    w.sample("acquire_attempts_total", {}, m.attempts);
    w.family("renewals_total", "counter", "Automatic extensions that succeeded.");
    w.sample("renewals_total", {}, m.renewals);
    w.family("locks_lost_total", "counter", "Auto-renewed locks given up.");
    w.sample("locks_lost_total", {}, m.locks_lost);
    w.family("handoffs_total", "counter",
             "Acquisitions granted by a release of this client handing the lock over.");
    w.sample("handoffs_total", {}, m.handoffs);
    return w.take();
}

}  // namespace redlock
