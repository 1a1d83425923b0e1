#include "cluster_faults.hpp"

#include "leftovers.hpp"
#include "record.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace redlock_torture {

using std::chrono::milliseconds;

cluster_faults::cluster_faults(std::vector<redlock_test::cluster_member>& members,
                               std::vector<std::string> lock_keys, cluster_fault_settings settings,
                               std::uint64_t seed, std::FILE* log)
    : members_{members},
      keys_{std::move(lock_keys)},
      settings_{settings},
      rng_{seed},
      log_{log},
      state_(members.size()),
      next_fault_{clock::now() + settings_.first_fault} {
    if (members_.empty() || keys_.empty())
        throw std::invalid_argument("cluster_faults: no member, or no key to aim at");
    // A key's slot is the same in every cluster (CRC16 of its hash tag).
    for (const auto& key : keys_) slots_.push_back(members_.front().key_slot(key));
    for (const char* kind :
         {"forced_failover", "restart", "manual_failover", "move_slot", "skipped", "holds_dropped"})
        counts_[kind] = 0;
}

auto cluster_faults::uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t {
    return std::uniform_int_distribution<std::int64_t>{lo, hi}(rng_);
}

void cluster_faults::span(const char* kind, std::size_t m, std::int64_t from_ns,
                          clock::time_point until) {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - clock::now());
    timeline_.fault(kind, m, from_ns, monotonic_ns() + std::max<std::int64_t>(left.count(), 0));
}

void cluster_faults::note(const char* what, std::size_t m, const std::string& detail) {
    if (log_ == nullptr) return;
    std::fprintf(log_, "%lld %s member=%zu %s\n", static_cast<long long>(monotonic_ns()), what, m,
                 detail.c_str());
    std::fflush(log_);
}

void cluster_faults::skip(const char* what, std::size_t m, const std::string& why) {
    ++counts_["skipped"];
    note("skip", m, std::string{what} + ": " + why);
}

auto cluster_faults::impaired(std::size_t m, clock::time_point now) const -> bool {
    return state_[m].crashed.has_value() || now < state_[m].impaired_until;
}

auto cluster_faults::other_impaired(std::size_t m, clock::time_point now) const -> bool {
    for (std::size_t i = 0; i < state_.size(); ++i) {
        if (i != m && impaired(i, now)) return true;
    }
    return false;
}

void cluster_faults::step() {
    const auto now = clock::now();
    std::size_t count = 0;
    for (std::size_t m = 0; m < state_.size(); ++m) count += impaired(m, now) ? 1 : 0;
    max_impaired_ = std::max(max_impaired_, count);
    for (std::size_t m = 0; m < state_.size(); ++m) {
        if (state_[m].crashed && state_[m].restart_at <= now) {
            restart(m);
            return;  // one operation per step: it took a while
        }
    }
    if (now >= next_fault_) inject(now);
}

void cluster_faults::restart(std::size_t m) {
    const std::size_t node = *state_[m].crashed;
    const auto began = clock::now();
    members_[m].restart_node(node);
    span("node-down", m, state_[m].crashed_ns, clock::now());
    const auto took = std::chrono::duration_cast<milliseconds>(clock::now() - began);
    state_[m].crashed.reset();
    ++counts_["restart"];
    note("restart", m,
         "node=" + std::to_string(node) + " port=" + std::to_string(members_[m].node(node).port()) +
             " role=" + members_[m].role(node) + " took_ms=" + std::to_string(took.count()));
}

void cluster_faults::inject(clock::time_point now) {
    // A fixed number of draws per fault, whatever happens to it.
    const auto roll = uniform(0, 99);
    const auto m = static_cast<std::size_t>(uniform(0, std::ssize(members_) - 1));
    const auto a = uniform(0, 1'000'000);
    const milliseconds gap{uniform(settings_.min_gap.count(), settings_.max_gap.count())};
    next_fault_ = now + gap;

    const std::size_t r = static_cast<std::size_t>(a) % keys_.size();
    const std::uint16_t slot = slots_[r];
    const char* what = roll < settings_.forced_failover ? "forced-failover"
                       : roll < settings_.forced_failover + settings_.manual_failover
                           ? "manual-failover"
                           : "move-slot";
    if (other_impaired(m, now)) return skip(what, m, "another member is impaired");
    redlock_test::cluster_member& member = members_[m];
    member_state& s = state_[m];
    const std::size_t master = member.master_of_slot(slot);
    std::string detail = "slot=" + std::to_string(slot) + " (" + keys_[r] +
                         ") master=" + std::to_string(master) +
                         " port=" + std::to_string(member.node(master).port());
    const auto began = clock::now();
    const std::int64_t began_ns = monotonic_ns();

    if (roll < settings_.forced_failover + settings_.manual_failover) {
        // Both need a running replica of that master: none while its shard's old master is
        // down (the crashed node is the replica-to-be of its successor).
        std::size_t replica = 0;
        try {
            replica = member.replica_of(master);
        } catch (const std::logic_error&) {
            return skip(what, m, detail + ": no running replica");
        }
        detail += " replica=" + std::to_string(replica);
        if (roll < settings_.forced_failover) {
            if (s.crashed)
                return skip(what, m,
                            detail + ": node " + std::to_string(*s.crashed) + " is still down");
            note("forced-failover-begin", m, detail);
            std::vector<bool> had_slot;
            for (const auto slot_of_key : slots_)
                had_slot.push_back(member.master_of_slot(slot_of_key) == master);
            std::size_t dropped = 0;
            // The SIGKILL comes next: what the replica had not received by then may be lost.
            timeline_.forced_kill(m, began_ns);
            member.forced_failover(master, [&](std::size_t promoted) {
                if (settings_.lose_holds) dropped = drop_holds(member.node(promoted), had_slot);
            });
            detail += " holds_dropped=" + std::to_string(dropped);
            counts_["holds_dropped"] += dropped;
            s.crashed = master;
            s.crashed_ns = began_ns;
            // Back (as a replica) once the quarantine is over, and 0-3 s later still.
            s.restart_at = clock::now() + settings_.quarantine + settings_.margin +
                           milliseconds{(a / 7) % 3001};
            ++counts_["forced_failover"];
        } else {
            note("manual-failover-begin", m, detail);
            member.manual_failover(master);
            ++counts_["manual_failover"];
        }
        s.impaired_until = clock::now() + settings_.quarantine + settings_.margin;
        span(roll < settings_.forced_failover ? "forced-failover" : "manual-failover", m, began_ns,
             s.impaired_until);
    } else {
        std::optional<std::size_t> to;
        for (std::size_t i = 0; i < member.size() && !to; ++i) {
            if (i != master && member.node(i).running() && member.role(i) == "master") to = i;
        }
        if (!to) return skip(what, m, detail + ": no other master");
        detail += " to=" + std::to_string(*to) + " port=" + std::to_string(member.node(*to).port());
        note("move-slot-begin", m, detail);
        member.move_slot(slot, *to);
        ++counts_["move_slot"];
        span("move-slot", m, began_ns, clock::now());
    }
    const auto took = std::chrono::duration_cast<milliseconds>(clock::now() - began);
    note(what, m, detail + " took_ms=" + std::to_string(took.count()));
    // The gap counts from the moment the member settled.
    next_fault_ = clock::now() + gap;
}

auto cluster_faults::drop_holds(const redlock_test::redis_server& node,
                                const std::vector<bool>& had_slot) -> std::size_t {
    std::size_t dropped = 0;
    for (std::size_t k = 0; k < keys_.size(); ++k) {
        if (!had_slot[k]) continue;
        // "redlock:{R}*": the lock key, the readers' set, the permits and their count; every
        // one in R's slot, so one DEL takes them.
        std::vector<std::string> argv{"DEL"};
        for (auto& key : keys_matching(node, keys_[k] + "*")) argv.push_back(std::move(key));
        if (argv.size() == 1) continue;
        const auto reply = node.command(argv);
        dropped += reply ? std::strtoull(reply->c_str(), nullptr, 10) : 0;
    }
    return dropped;
}

void cluster_faults::heal_all() {
    for (std::size_t m = 0; m < state_.size(); ++m) {
        if (state_[m].crashed) restart(m);
    }
    note("healed-all", 0, "");
}

auto cluster_faults::layout() const -> std::string {
    std::string text;
    for (std::size_t m = 0; m < members_.size(); ++m) {
        text += (text.empty() ? "" : "; ") + std::string{"member "} + std::to_string(m) + ":";
        for (std::size_t r = 0; r < keys_.size(); ++r) {
            const std::size_t owner = members_[m].master_of_slot(slots_[r]);
            text += " " + keys_[r] + " slot " + std::to_string(slots_[r]) + " on node " +
                    std::to_string(owner) + " (" + std::to_string(members_[m].node(owner).port()) +
                    ")";
        }
    }
    return text;
}

}  // namespace redlock_torture
