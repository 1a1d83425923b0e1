#include "checker.hpp"

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace redlock_torture {
namespace {

using hold_list = std::vector<const hold_record*>;

/// Overlaps among `list` (sorted by start) where one side is exclusive: writers against
/// everyone, readers against writers only. `all_exclusive` makes every hold a writer
/// (the holders of one permit).
void find_overlaps(const hold_list& list, bool all_exclusive, check_report& report) {
    const hold_record* longest_any = nullptr;     // believed valid the longest so far
    const hold_record* longest_writer = nullptr;  // the same, among writers
    for (const hold_record* h : list) {
        const bool exclusive = all_exclusive || h->kind != hold_kind::reader;
        const hold_record* against = exclusive ? longest_any : longest_writer;
        if (against != nullptr && h->start_ns < against->believed_end_ns()) {
            const std::int64_t until = std::min(against->believed_end_ns(), h->believed_end_ns());
            report.overlaps.push_back(overlap{*against, *h, until - h->start_ns});
        }
        auto later_end = [h](const hold_record* so_far) {
            return so_far == nullptr || h->believed_end_ns() > so_far->believed_end_ns();
        };
        if (later_end(longest_any)) longest_any = h;
        if (exclusive && later_end(longest_writer)) longest_writer = h;
    }
}

/// Writers' tokens strictly increase; readers' never fall below the highest writer's. Only
/// holds with a token take part: an unfenced writer excludes (find_overlaps) but orders nothing.
void find_inversions(const hold_list& list, check_report& report) {
    const hold_record* highest = nullptr;  // the earlier writer with the highest token
    for (const hold_record* h : list) {
        if (!h->fenced) continue;
        if (highest != nullptr) {
            const bool too_low = h->kind == hold_kind::writer ? h->fence <= highest->fence
                                                              : h->fence < highest->fence;
            if (too_low) report.inversions.push_back(inversion{*highest, *h});
        }
        if (h->kind == hold_kind::writer && (highest == nullptr || h->fence > highest->fence))
            highest = h;
    }
}

/// The most holds of `list` believed valid at one instant; with `limit` > 0, an excess
/// each time their count rises above it. An interval ending at the instant another starts
/// does not meet it (the intervals are half-open).
auto sweep(const std::string& resource, const hold_list& list, int limit, check_report& report)
    -> std::size_t {
    struct event {
        std::int64_t at;
        int starts;  // 0: an end, sorted before a start at the same instant
        const hold_record* h;
    };
    std::vector<event> events;
    for (const hold_record* h : list) {
        events.push_back({h->start_ns, 1, h});
        events.push_back({h->believed_end_ns(), 0, h});
    }
    std::stable_sort(events.begin(), events.end(), [](const event& a, const event& b) {
        return std::tie(a.at, a.starts) < std::tie(b.at, b.starts);
    });
    hold_list active;
    std::size_t most = 0;
    for (const auto& [at, starts, h] : events) {
        if (starts == 0) {
            std::erase(active, h);
            continue;
        }
        active.push_back(h);
        most = std::max(most, active.size());
        if (limit > 0 && active.size() == static_cast<std::size_t>(limit) + 1) {
            excess e{resource, limit, at, {}};
            for (const hold_record* holder : active) e.holders.push_back(*holder);
            report.excesses.push_back(std::move(e));
        }
    }
    return most;
}

}  // namespace

auto impossible_values(const hold_record& h, permit_names names) -> std::string {
    std::string what;
    auto add = [&what](const std::string& text) { what += (what.empty() ? "" : "; ") + text; };
    if (h.kind == hold_kind::permit) {
        if (h.permits < 1) add("a semaphore of " + std::to_string(h.permits) + " permits");
        if (h.permit >= h.permits && h.permits >= 1) {
            add("permit " + std::to_string(h.permit) + " of " + std::to_string(h.permits) +
                ": past K");
        }
        if (h.permit < -1 || (h.permit == -1 && names == permit_names::required))
            add("permit " + std::to_string(h.permit) + ": below 0");
        if (h.fenced) add("a permit with a fencing token (" + std::to_string(h.fence) + ")");
    } else if (h.kind == hold_kind::writer && h.fenced && h.fence == 0) {
        add("a fenced writer with token 0 (a writer's token is at least 1)");
    }
    return what;
}

auto check_holds(const std::vector<hold_record>& holds, permit_names names) -> check_report {
    check_report report;
    report.holds = holds.size();
    std::map<std::string, hold_list> by_resource;
    for (const auto& h : holds) {
        if (auto what = impossible_values(h, names); !what.empty())
            report.impossibles.push_back({h, std::move(what)});
        ++report.holds_per_resource[h.resource];
        if (!h.valid_at_start || h.believed_end_ns() <= h.start_ns) {
            ++report.never_valid;
            continue;
        }
        ++report.holds_per_kind[kind_name(h.kind)];
        ++report.holds_per_via[via_name(h.via)];
        if (h.kind == hold_kind::writer && !h.fenced) ++report.unfenced_writers;
        by_resource[h.resource].push_back(&h);
    }
    for (auto& [resource, list] : by_resource) {
        std::sort(list.begin(), list.end(), [](const hold_record* a, const hold_record* b) {
            return std::tie(a->start_ns, a->worker, a->thread) <
                   std::tie(b->start_ns, b->worker, b->thread);
        });
        report.most_at_once[resource] = sweep(resource, list, 0, report);
        hold_list locks;                     // readers and writers
        std::map<int, hold_list> by_permit;  // each permit's holders
        hold_list permits;                   // every permit's holders
        int k = 0;                           // the smallest K named
        for (const hold_record* h : list) {
            if (h->kind != hold_kind::permit) {
                locks.push_back(h);
                continue;
            }
            if (h->permit >= 0) by_permit[h->permit].push_back(h);
            permits.push_back(h);
            if (h->permits >= 1) k = k == 0 ? h->permits : std::min(k, h->permits);
        }
        find_overlaps(locks, false, report);
        find_inversions(locks, report);
        for (const auto& [permit, holders] : by_permit) find_overlaps(holders, true, report);
        if (!permits.empty()) sweep(resource, permits, k, report);
    }
    return report;
}

auto holds_via(const check_report& report, hold_via via) -> std::size_t {
    const auto it = report.holds_per_via.find(via_name(via));
    return it == report.holds_per_via.end() ? 0 : it->second;
}

auto describe_problems(const check_report& report, std::int64_t origin_ns, std::size_t limit)
    -> std::string {
    auto ms = [origin_ns](std::int64_t ns) {
        char text[32];
        std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns - origin_ns) / 1e6);
        return std::string{text};
    };
    std::string text;
    for (std::size_t i = 0; i < report.overlaps.size() && i < limit; ++i) {
        const auto& o = report.overlaps[i];
        text += "\nOVERLAP of " + ms(origin_ns + o.overlap_ns) + " ms:\n  " +
                o.earlier.describe(origin_ns) + "\n  " + o.later.describe(origin_ns);
    }
    for (std::size_t i = 0; i < report.inversions.size() && i < limit; ++i) {
        const auto& v = report.inversions[i];
        text += "\nTOKEN INVERSION:\n  " + v.earlier.describe(origin_ns) + "\n  " +
                v.later.describe(origin_ns);
    }
    for (std::size_t i = 0; i < report.excesses.size() && i < limit; ++i) {
        const auto& e = report.excesses[i];
        text += "\nMORE THAN " + std::to_string(e.permits) + " PERMITS of '" + e.resource +
                "' at " + ms(e.at_ns) + " ms:";
        for (const auto& h : e.holders) text += "\n  " + h.describe(origin_ns);
    }
    for (std::size_t i = 0; i < report.impossibles.size() && i < limit; ++i) {
        const auto& b = report.impossibles[i];
        text += "\nIMPOSSIBLE HOLD (a safety finding): " + b.what + ":\n  " +
                b.hold.describe(origin_ns) + "\n  record: " + b.hold.format();
    }
    return text;
}

}  // namespace redlock_torture
