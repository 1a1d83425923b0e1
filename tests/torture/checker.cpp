#include "checker.hpp"

#include <algorithm>

namespace redlock_torture {

auto check_holds(const std::vector<hold_record>& holds) -> check_report {
    check_report report;
    report.holds = holds.size();
    std::map<std::string, std::vector<const hold_record*>> by_resource;
    for (const auto& h : holds) {
        ++report.holds_per_resource[h.resource];
        if (!h.valid_at_start || h.believed_end_ns() <= h.start_ns) {
            ++report.never_valid;
            continue;
        }
        by_resource[h.resource].push_back(&h);
    }
    for (auto& [resource, list] : by_resource) {
        std::sort(list.begin(), list.end(), [](const hold_record* a, const hold_record* b) {
            return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->worker < b->worker;
        });
        const hold_record* longest = nullptr;  // the earlier hold believed valid the longest
        const hold_record* highest = nullptr;  // the earlier hold with the highest token
        for (const hold_record* h : list) {
            if (longest != nullptr && h->start_ns < longest->believed_end_ns()) {
                const std::int64_t until =
                    std::min(longest->believed_end_ns(), h->believed_end_ns());
                report.overlaps.push_back(overlap{*longest, *h, until - h->start_ns});
            }
            if (highest != nullptr && h->fence <= highest->fence) {
                report.inversions.push_back(inversion{*highest, *h});
            }
            if (longest == nullptr || h->believed_end_ns() > longest->believed_end_ns())
                longest = h;
            if (highest == nullptr || h->fence > highest->fence) highest = h;
        }
    }
    return report;
}

}  // namespace redlock_torture
