#include "token_erasure.hpp"

#include "record_fields.hpp"

#include <charconv>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

namespace redlock_torture {
namespace {

// A fault that never closed lasted to the end of the run, and so past any leadership.
constexpr std::int64_t end_of_time = std::numeric_limits<std::int64_t>::max();

template <class T>
auto whole_number(std::string_view text, T& out) -> bool {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
}

struct log_line {
    std::int64_t at_ns = 0;
    std::string event;
    std::map<std::string, std::string> fields;
    std::set<std::string, std::less<>> words;  ///< bare words: "in-memory", "undelayed", ...
};

// fields_of() refuses bare words, and a kill line carries one: split the words here.
auto split_line(std::string_view line) -> std::optional<log_line> {
    log_line out;
    bool timed = false;
    while (!line.empty()) {
        const auto space = line.find(' ');
        const std::string_view word = line.substr(0, space);
        line.remove_prefix(space == std::string_view::npos ? line.size() : space + 1);
        if (word.empty()) continue;
        if (!timed) {
            if (!whole_number(word, out.at_ns)) return std::nullopt;
            timed = true;
        } else if (out.event.empty()) {
            out.event = word;
        } else if (const auto eq = word.find('='); eq != std::string_view::npos) {
            out.fields.emplace(std::string{word.substr(0, eq)}, std::string{word.substr(eq + 1)});
        } else {
            out.words.emplace(word);
        }
    }
    if (out.event.empty()) return std::nullopt;
    return out;
}

// "0,1,2" as nodes; nullopt if an item is not a number.
auto node_list(std::string_view text) -> std::optional<std::vector<std::size_t>> {
    std::vector<std::size_t> nodes;
    while (true) {
        const auto comma = text.find(',');
        if (!whole_number(text.substr(0, comma), nodes.emplace_back())) return std::nullopt;
        if (comma == std::string_view::npos) return nodes;
        text.remove_prefix(comma + 1);
    }
}

// The event that closes each kind of fault (on the same node, or the same candidate slot).
const std::map<std::string, std::string, std::less<>> opener_of = {
    {"restart", "kill"},
    {"thaw", "freeze"},
    {"unblackhole", "blackhole"},
    {"latency-end", "latency"},
    {"candidate-heal", "candidate-partition"},
    {"candidate-storm-end", "candidate-storm"}};

struct parser {
    fault_timeline t;
    // The faults still open, by kind and node (or slot), to their index in t.faults.
    using open_key = std::pair<std::string, std::size_t>;
    std::map<open_key, std::size_t> open;

    void begin(std::size_t where, fault_span span) {
        open[{span.kind, where}] = t.faults.size();
        t.faults.push_back(std::move(span));
    }
    void end_where(std::int64_t at, auto&& ends) {
        std::erase_if(open, [&](const auto& o) {
            if (ends(o.first)) t.faults[o.second].to_ns = at;
            return ends(o.first);
        });
    }

    void add(std::string_view text) {
        const auto l = split_line(text);
        if (!l) {
            if (!text.empty()) ++t.unreadable;
            return;
        }
        const std::string& e = l->event;
        const std::int64_t at = l->at_ns;
        // Observer faults, "skip", "start", "healed", ... cut no candidate off from a node.
        const bool aimed = e.starts_with("candidate-");
        if (!aimed && !l->fields.contains("node")) return;
        std::size_t node = 0;
        std::size_t slot = 0;
        int candidate = 0;
        if (aimed ? !field_number(l->fields, "candidate", candidate) ||
                        !field_number(l->fields, "slot", slot)
                  : !field_number(l->fields, "node", node)) {
            ++t.unreadable;
            return;
        }
        if (aimed) t.slot_of[candidate] = slot;
        if (const auto o = opener_of.find(e); o != opener_of.end()) {
            const open_key key{o->second, aimed ? slot : node};
            end_where(at, [&](const open_key& k) { return k == key; });
        } else if (e == "healed-proxies") {
            // heal_links() ends every blackhole and latency at once, with this one line.
            end_where(at, [](const open_key& k) {
                return k.first == "blackhole" || k.first == "latency";
            });
        } else if (e == "candidate-healed") {
            // heal_all() heals every slot; the line names slot 0's candidate only.
            end_where(at, [](const open_key& k) { return k.first.starts_with("candidate-"); });
        } else if (e == "drop" || e == "reset") {
            t.faults.push_back({e, at, at, {node}, std::nullopt});
        } else if (e == "kill" || e == "freeze" || e == "blackhole" || e == "latency") {
            begin(node, {e, at, end_of_time, {node}, std::nullopt});
            // A persistent node (aof=always) comes back with every counter it had.
            if (e == "kill" && l->words.contains("in-memory"))
                t.in_memory_kills.emplace_back(at, node);
        } else if (e == "candidate-storm") {
            begin(slot, {e, at, end_of_time, {}, slot});  // resets to every node
        } else if (e == "candidate-partition") {
            const auto it = l->fields.find("nodes");
            const auto nodes = it == l->fields.end() ? std::nullopt : node_list(it->second);
            if (nodes) {
                begin(slot, {e, at, end_of_time, *nodes, slot});
            } else {
                ++t.unreadable;
            }
        }
    }
};

auto meets(const fault_span& f, std::int64_t from, std::int64_t to) -> bool {
    return f.from_ns <= to && f.to_ns >= from;
}

auto span_text(const fault_span& f, std::int64_t origin_ns) -> std::string {
    if (f.to_ns == f.from_ns) return f.kind + " at " + ms_since(f.from_ns, origin_ns);
    return f.kind + " [" + ms_since(f.from_ns, origin_ns) + ", " +
           (f.to_ns == end_of_time ? std::string{"end"} : ms_since(f.to_ns, origin_ns)) + "]";
}

}  // namespace

auto parse_fault_log(std::istream& in) -> fault_timeline {
    parser p;
    std::string line;
    while (std::getline(in, line)) p.add(line);
    return std::move(p.t);
}

auto read_fault_log(const std::filesystem::path& file) -> fault_timeline {
    std::ifstream in{file};
    return in ? parse_fault_log(in) : fault_timeline{};
}

auto explain_erasure(const fault_timeline& faults, const token_span& span, std::size_t node_count)
    -> repeat_explanation {
    repeat_explanation why;
    // The confirm round is sent between the call and its return. Each node is named by its
    // first fault there; the node's own faults first, as the more telling.
    const auto missed = [&](const fault_span& f, std::size_t node) {
        if (node >= node_count || !meets(f, span.called_ns, span.confirmed_ns)) return;
        why.missed.emplace(node, f);
    };
    // A fault of a slot reached whichever candidate ran in it then: here, the earlier leader's
    // campaign, if it met the campaign.
    const auto slot = span.candidate ? faults.slot_of.find(*span.candidate) : faults.slot_of.end();
    for (const bool aimed : {false, true}) {
        for (const auto& f : faults.faults) {
            if (f.slot.has_value() != aimed) continue;
            if (aimed && (slot == faults.slot_of.end() || *f.slot != slot->second)) continue;
            for (const auto n : f.nodes) missed(f, n);
            if (f.nodes.empty()) {
                for (std::size_t n = 0; n < node_count; ++n) missed(f, n);
            }
        }
    }
    for (const auto& [at, node] : faults.in_memory_kills) {
        if (node < node_count && at >= span.called_ns && at <= span.next_start_ns)
            why.emptied.insert(node);
    }
    std::set<std::size_t> either = why.emptied;
    for (const auto& [node, f] : why.missed) either.insert(node);
    why.within_limit = either.size() >= node_count / 2 + 1;
    return why;
}

auto explain_repeat(const fault_timeline& faults, const term_inversion& repeat,
                    std::size_t node_count) -> repeat_explanation {
    return explain_erasure(faults,
                           token_span{.called_ns = repeat.earlier.called_ns,
                                      .confirmed_ns = repeat.earlier.start_ns,
                                      .next_start_ns = repeat.later.start_ns,
                                      .candidate = repeat.earlier.worker},
                           node_count);
}

auto take_explained_repeats(election_report& report, const fault_timeline& faults,
                            std::size_t node_count) -> std::vector<explained_repeat> {
    std::vector<explained_repeat> explained;
    std::erase_if(report.inversions, [&](const term_inversion& v) {
        auto why = explain_repeat(faults, v, node_count);
        const bool within = why.within_limit;
        if (within) explained.push_back({v, std::move(why)});
        return within;
    });
    return explained;
}

namespace {

// The nodes each side of an explanation names: "may have missed ...: 1 (blackhole [..] ms)
// ...; in-memory nodes killed ...: 3 4".
auto why_text(const repeat_explanation& why, const std::string& what, std::int64_t origin_ns)
    -> std::string {
    std::string text = "\n      may have missed the confirm of " + what + ":";
    for (const auto& [node, f] : why.missed)
        text += " " + std::to_string(node) + " (" + span_text(f, origin_ns) + " ms)";
    text += "; in-memory nodes killed (restarted empty) before the second won:";
    for (const auto node : why.emptied) text += " " + std::to_string(node);
    return text;
}

}  // namespace

auto describe_explained_repeats(const std::vector<explained_repeat>& repeats,
                                std::int64_t origin_ns, std::size_t limit) -> std::string {
    std::string text =
        "  terms repeated within the README's limit (in-memory restarts after nodes missed the "
        "confirm round): " +
        std::to_string(repeats.size());
    for (std::size_t i = 0; i < repeats.size() && i < limit; ++i) {
        const auto& [repeat, why] = repeats[i];
        text += "\n    " + repeat.earlier.describe(origin_ns) + "\n    " +
                repeat.later.describe(origin_ns) +
                why_text(why, "term " + std::to_string(repeat.earlier.term), origin_ns);
    }
    return text;
}

auto take_explained_inversions(check_report& report, const fault_timeline& faults,
                               std::size_t node_count) -> std::vector<explained_inversion> {
    std::vector<explained_inversion> explained;
    std::erase_if(report.inversions, [&](const inversion& v) {
        auto why = explain_erasure(faults,
                                   token_span{.called_ns = v.earlier.called_ns,
                                              .confirmed_ns = v.earlier.start_ns,
                                              .next_start_ns = v.later.start_ns,
                                              .candidate = std::nullopt},
                                   node_count);
        const bool within = why.within_limit;
        if (within) explained.push_back({v, std::move(why)});
        return within;
    });
    return explained;
}

auto describe_explained_inversions(const std::vector<explained_inversion>& found,
                                   std::int64_t origin_ns, std::size_t limit) -> std::string {
    std::string text =
        "  fencing tokens not rising within the README's limit (in-memory restarts after nodes "
        "missed the confirm round): " +
        std::to_string(found.size());
    for (std::size_t i = 0; i < found.size() && i < limit; ++i) {
        const auto& [pair, why] = found[i];
        text += "\n    " + pair.earlier.describe(origin_ns) + "\n    " +
                pair.later.describe(origin_ns) +
                why_text(why, "token " + std::to_string(pair.earlier.fence), origin_ns);
    }
    return text;
}

}  // namespace redlock_torture
