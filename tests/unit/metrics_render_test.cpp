// to_prometheus() and the recorders, without a network: bucket boundaries,
// cumulative buckets and +Inf, label escaping, the prefix, the RTT sampling.
#include "transport/metrics_recorder.hpp"

#include <doctest/doctest.h>
#include <redlock/metrics.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;

namespace {

auto has_line(const std::string& text, const std::string& line) -> bool {
    return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

}  // namespace

TEST_SUITE("metrics") {
    TEST_CASE("a histogram puts a value on a bucket's bound in that bucket (le is <=)") {
        redlock::detail::latency_histogram h;
        h.record(100us);                         // 0.0001: the first bucket
        h.record(100us + 1ns);                   // just above: the second
        h.record(1ms);                           // 0.001
        h.record(20s);                           // above 10 s: +Inf only
        h.record(std::chrono::nanoseconds{-5});  // a clock gone backwards counts as 0
        const redlock::histogram_snapshot s = h.snapshot();
        CHECK(s.counts[0] == 2);
        CHECK(s.counts[1] == 1);
        CHECK(s.counts[3] == 1);
        CHECK(s.counts[redlock::latency_buckets.size()] == 1);
        CHECK(s.count() == 5);
        CHECK(s.sum_seconds == doctest::Approx(20.0012));
    }

    TEST_CASE("the text has HELP and TYPE, cumulative buckets ending in +Inf, _sum and _count") {
        redlock::metrics_snapshot m;
        m.release.counts[0] = 1;
        m.release.counts[3] = 2;
        m.release.counts[redlock::latency_buckets.size()] = 1;
        m.release.sum_seconds = 12.5;
        m.locks_held = 3;
        m.renewals = 7;
        const std::string text = redlock::to_prometheus(m);
        CHECK(has_line(text, "# TYPE redlock_release_duration_seconds histogram"));
        CHECK(text.find("# HELP redlock_release_duration_seconds ") != std::string::npos);
        CHECK(has_line(text, "redlock_release_duration_seconds_bucket{le=\"0.0001\"} 1"));
        CHECK(has_line(text, "redlock_release_duration_seconds_bucket{le=\"0.00025\"} 1"));
        CHECK(has_line(text, "redlock_release_duration_seconds_bucket{le=\"0.001\"} 3"));
        CHECK(has_line(text, "redlock_release_duration_seconds_bucket{le=\"10\"} 3"));
        CHECK(has_line(text, "redlock_release_duration_seconds_bucket{le=\"+Inf\"} 4"));
        CHECK(has_line(text, "redlock_release_duration_seconds_sum 12.5"));
        CHECK(has_line(text, "redlock_release_duration_seconds_count 4"));
        CHECK(has_line(text,
                       "redlock_acquire_duration_seconds_bucket{outcome=\"contended\",le=\"+Inf\"} "
                       "0"));
        CHECK(has_line(text, "# TYPE redlock_locks_held gauge"));
        CHECK(has_line(text, "redlock_locks_held 3"));
        CHECK(has_line(text, "# TYPE redlock_renewals_total counter"));
        CHECK(has_line(text, "redlock_renewals_total 7"));
        CHECK(text.ends_with("\n"));
    }

    TEST_CASE("label values are escaped, and the prefix made a valid name") {
        redlock::metrics_snapshot m;
        m.nodes.push_back(redlock::node_metrics{.node = "/run/a\"b\\c\nd.sock", .up = true});
        const std::string text = redlock::to_prometheus(m, "9my-app");
        CHECK(has_line(text, "_my_app_node_up{node=\"/run/a\\\"b\\\\c\\nd.sock\"} 1"));
        CHECK(has_line(text,
                       "_my_app_node_errors_total{node=\"/run/a\\\"b\\\\c\\nd.sock\","
                       "kind=\"timeout\"} 0"));
        const std::string bare = redlock::to_prometheus(m, "");
        CHECK(has_line(bare, "locks_held 0"));
    }

    TEST_CASE("the RTT is sampled at most every 100 ms, smoothed, and dropped with its slot") {
        redlock::detail::node_counters c;
        c.on_sent(5, 1000);
        c.on_sent(6, 1000);      // one sample in flight at a time
        c.on_answered(4, true);  // an older request: still in flight
        c.on_answered(5, true);  // the sample
        CHECK(c.rtt_seconds() > 0);
        CHECK(c.rtt_seconds() < 1);
        const double first = c.rtt_seconds();
        c.on_sent(7, 1050);  // too soon after the last
        c.on_answered(7, true);
        CHECK(c.rtt_seconds() == first);
        c.on_sent(8, 1100);
        c.on_answered(9, true);  // its slot went by (the connection failed): no sample
        CHECK(c.rtt_seconds() == first);
        c.on_sent(10, 1200);
        c.drop_sample();
        c.on_answered(10, true);
        CHECK(c.rtt_seconds() == first);
    }
}
