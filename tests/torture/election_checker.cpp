#include "election_checker.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

namespace redlock_torture {
namespace {

using lead_list = std::vector<const lead_record*>;

auto by_start(const lead_record* a, const lead_record* b) -> bool {
    return std::tie(a->start_ns, a->worker, a->term) < std::tie(b->start_ns, b->worker, b->term);
}

void check_leaderships(const lead_list& valid, election_report& report) {
    const lead_record* longest = nullptr;  // believed valid the longest so far
    const lead_record* highest = nullptr;  // the highest term so far
    const lead_record* previous = nullptr;
    for (const lead_record* l : valid) {
        if (longest != nullptr && l->start_ns < longest->believed_end_ns()) {
            const std::int64_t until = std::min(longest->believed_end_ns(), l->believed_end_ns());
            report.overlaps.push_back(lead_overlap{*longest, *l, until - l->start_ns});
        }
        if (highest != nullptr && l->term <= highest->term)
            report.inversions.push_back(term_inversion{*highest, *l});
        if (previous != nullptr && previous->how == lead_end::killed) {
            const std::int64_t gap = l->start_ns - previous->until_end_ns;
            if (!previous->stepping_down) {
                if (report.failovers_after_kill == 0 || gap < report.shortest_kill_gap_ns)
                    report.shortest_kill_gap_ns = gap;
                report.longest_kill_gap_ns = std::max(report.longest_kill_gap_ns, gap);
                ++report.failovers_after_kill;
                if (gap < 0) report.early_successors.push_back(lead_overlap{*previous, *l, -gap});
            }
        } else if (previous != nullptr) {
            const std::int64_t gap = l->start_ns - previous->believed_end_ns();
            if (previous->how == lead_end::abandoned || previous->how == lead_end::lost) {
                ++report.failovers_by_expiry;
                report.longest_expiry_gap_ns = std::max(report.longest_expiry_gap_ns, gap);
            } else {
                ++report.handovers_by_resignation;
                report.longest_resign_gap_ns = std::max(report.longest_resign_gap_ns, gap);
            }
        }
        if (longest == nullptr || l->believed_end_ns() > longest->believed_end_ns()) longest = l;
        if (highest == nullptr || l->term > highest->term) highest = l;
        previous = l;
        ++report.ends[lead_end_name(l->how)];
        if (l->how == lead_end::killed && !l->stepping_down) ++report.killed_in_office;
    }
}

/// The fenced store, replayed over every write in time order.
void replay_store(const std::vector<write_record>& writes,
                  const std::map<std::pair<int, std::uint64_t>, const lead_record*>& owner,
                  election_report& report) {
    std::vector<const write_record*> order;
    for (const auto& w : writes) order.push_back(&w);
    std::stable_sort(order.begin(), order.end(), [](const write_record* a, const write_record* b) {
        return std::tie(a->at_ns, a->worker) < std::tie(b->at_ns, b->worker);
    });
    std::uint64_t highest = 0;
    bool any = false;
    std::int64_t newest_start = 0;  // the latest leadership start among the writes so far
    bool newest_known = false;
    for (const write_record* w : order) {
        const bool accepted = !any || w->term >= highest;
        const auto it = owner.find({w->worker, w->term});
        const lead_record* lead = it == owner.end() ? nullptr : it->second;
        if (accepted) {
            ++report.accepted;
            highest = w->term;
            any = true;
        }
        if (lead == nullptr) {
            report.write_problems.push_back(
                {*w, "no leadership of its candidate has this term", std::nullopt});
            continue;
        }
        const bool in_office = !w->late && lead->valid_at_start && w->at_ns >= lead->start_ns &&
                               w->at_ns < lead->believed_end_ns();
        if (!w->late && !in_office) {
            report.write_problems.push_back(
                {*w, "made outside its leadership, not marked late", *lead});
        }
        if (in_office && !accepted) {
            report.write_problems.push_back(
                {*w,
                 "the leader in office was refused: the store had term " + std::to_string(highest),
                 *lead});
        }
        if (!in_office) {
            ++report.stale_writes;
            const bool opposed = newest_known && newest_start > lead->start_ns;
            if (!accepted) {
                ++report.stale_rejected;
            } else if (opposed) {
                report.write_problems.push_back(
                    {*w,
                     "a stale term accepted after a newer leader wrote (store at term " +
                         std::to_string(highest) + ")",
                     *lead});
            } else {
                ++report.stale_unopposed;
            }
        }
        if (!newest_known || lead->start_ns > newest_start) newest_start = lead->start_ns;
        newest_known = true;
    }
}

}  // namespace

auto check_election(const std::vector<lead_record>& leads, const std::vector<write_record>& writes)
    -> election_report {
    election_report report;
    report.leaderships = leads.size();
    lead_list valid;
    std::map<std::pair<int, std::uint64_t>, const lead_record*> owner;
    for (const auto& l : leads) {
        owner.emplace(std::pair{l.worker, l.term}, &l);
        if (report.lowest_term == 0 || l.term < report.lowest_term) report.lowest_term = l.term;
        report.highest_term = std::max(report.highest_term, l.term);
        if (!l.valid_at_start || l.believed_end_ns() <= l.start_ns) {
            ++report.never_valid;
            continue;
        }
        valid.push_back(&l);
    }
    std::sort(valid.begin(), valid.end(), by_start);
    check_leaderships(valid, report);
    report.writes = writes.size();
    for (const auto& w : writes) report.late_writes += w.late ? 1 : 0;
    replay_store(writes, owner, report);
    return report;
}

auto describe_election_problems(const election_report& report, std::int64_t origin_ns,
                                std::size_t limit) -> std::string {
    std::string text;
    for (std::size_t i = 0; i < report.overlaps.size() && i < limit; ++i) {
        const auto& o = report.overlaps[i];
        text += "\nLEADERSHIPS OVERLAP by " + std::to_string(o.overlap_ns / 1000) + " us:\n  " +
                o.earlier.describe(origin_ns) + "\n  " + o.later.describe(origin_ns);
    }
    for (std::size_t i = 0; i < report.inversions.size() && i < limit; ++i) {
        const auto& v = report.inversions[i];
        text += "\nTERM NOT INCREASING:\n  " + v.earlier.describe(origin_ns) + "\n  " +
                v.later.describe(origin_ns);
    }
    for (std::size_t i = 0; i < report.early_successors.size() && i < limit; ++i) {
        const auto& o = report.early_successors[i];
        text += "\nLEADER AFTER A KILL BEFORE ITS VALIDITY ENDED, by " +
                std::to_string(o.overlap_ns / 1000) + " us:\n  " + o.earlier.describe(origin_ns) +
                "\n  " + o.later.describe(origin_ns);
    }
    for (std::size_t i = 0; i < report.write_problems.size() && i < limit; ++i) {
        const auto& p = report.write_problems[i];
        text += "\nBAD WRITE: " + p.write.describe(origin_ns) + ": " + p.why;
        if (p.lead) text += "\n  " + p.lead->describe(origin_ns);
    }
    return text;
}

}  // namespace redlock_torture
