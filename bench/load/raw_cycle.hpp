#pragma once

#include "load/phase.hpp"
#include "redlock/config.hpp"
#include "sansio/command.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/scripts.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::bench {

/// The commands of one lock cycle, round by round, exactly as the library
/// sends them for the same variant (scripts and SHA-1s from
/// lib/sansio/scripts.cpp), for the raw modes, which have no lock logic: a
/// round goes to every node at once, the next starts once a majority of
/// nodes answered, and the cycle ends when every node answered the last
/// round (the release), as with the library.
enum class round_kind : std::uint8_t { set, acquire_script, confirm, extend, release };

struct cycle_plan {
    std::vector<round_kind> rounds;
    std::size_t acquired_after = 0;  ///< the lock counts as acquired once this round has a majority

    [[nodiscard]] static auto of(variant v) -> cycle_plan {
        switch (v) {
            case variant::fencing:
                return {{round_kind::acquire_script, round_kind::confirm, round_kind::release}, 1};
            case variant::extend:
                return {{round_kind::set, round_kind::extend, round_kind::release}, 0};
            case variant::plain:
                break;
        }
        return {{round_kind::set, round_kind::release}, 0};
    }
};

/// Every key of one resource, named as the library names them.
struct raw_keys {
    std::string key;
    std::string fence_key;
    std::string queue_key;
    std::string live_key;
    std::string offer_key;
};

/// One in-flight cycle's strings and progress.
struct raw_cycle {
    std::string key;
    std::string fence_key;
    std::string queue_key;
    std::string live_key;
    std::string offer_key;
    /// With more resources than chains: this chain's, taken in turn (empty: one resource).
    std::vector<raw_keys> spread;
    std::size_t turn = 0;
    std::string value;
    std::string token;
    std::uint64_t max_counter = 0;
    std::size_t round = 0;
    std::size_t answered = 0;
    steady::time_point t0{};
};

/// 32 hex digits, unique per call: a splitmix64 sequence. The raw modes
/// need distinct values, not a CSPRNG (which is part of what the library's
/// cost includes).
class value_sequence {
public:
    explicit value_sequence(std::uint64_t seed) noexcept : state_{seed} {}
    void next(std::string& out) {
        static constexpr char hex[] = "0123456789abcdef";
        out.resize(32);
        for (int half = 0; half < 2; ++half) {
            std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            z ^= z >> 31;
            for (int i = 0; i < 16; ++i) out[half * 16 + i] = hex[(z >> (i * 4)) & 0xF];
        }
    }

private:
    std::uint64_t state_;
};

/// Starts cycle `c` afresh at `now`, with a new value.
inline void restart_cycle(raw_cycle& c, steady::time_point now, value_sequence& values) {
    c.t0 = now;
    c.round = 0;
    c.answered = 0;
    c.max_counter = 0;
    values.next(c.value);
    if (!c.spread.empty()) {
        // Copied into the cycle's own strings: no allocation once they are long enough.
        const raw_keys& k = c.spread[c.turn];
        if (++c.turn == c.spread.size()) c.turn = 0;
        c.key = k.key;
        c.fence_key = k.fence_key;
        c.queue_key = k.queue_key;
        c.live_key = k.live_key;
        c.offer_key = k.offer_key;
    }
}

/// What round `kind` needs before it is encoded: the fencing token, from the
/// counters the previous round read.
inline void prepare_round(raw_cycle& c, round_kind kind) {
    if (kind == round_kind::confirm) c.token = std::to_string(c.max_counter + 1);
}

/// Every in-flight cycle's keys, named as the library names them.
[[nodiscard]] inline auto make_cycles(const client_config& config, const workload& load)
    -> std::vector<raw_cycle> {
    const auto keys_of = [&](std::size_t resource) {
        // Every key of a lock carries the resource's hash tag ("redlock:{resource}").
        const std::string tagged =
            detail::tagged_resource(load.resource_prefix + std::to_string(resource));
        raw_keys k{config.key_prefix + tagged,
                   config.fence_prefix + tagged,
                   config.queue_prefix + tagged,
                   {},
                   {}};
        k.live_key = k.queue_key + "|live";
        k.offer_key = k.queue_key + "|offer";
        return k;
    };
    std::vector<raw_cycle> cycles(static_cast<std::size_t>(load.concurrency));
    for (std::size_t i = 0; i < cycles.size(); ++i) {
        raw_keys k = keys_of(i);
        cycles[i].key = k.key;
        cycles[i].fence_key = k.fence_key;
        cycles[i].queue_key = k.queue_key;
        cycles[i].live_key = k.live_key;
        cycles[i].offer_key = k.offer_key;
        const auto mine = resources_of_chain(i, cycles.size(),
                                             static_cast<std::size_t>(std::max(load.resources, 0)));
        if (mine.size() < 2) continue;
        for (const std::size_t r : mine) cycles[i].spread.push_back(keys_of(r));
    }
    return cycles;
}

/// What both raw drivers derive from the config and the workload.
struct raw_setup {
    raw_setup(const client_config& config, const workload& load, std::uint64_t seed)
        : plan{cycle_plan::of(load.kind)},
          ttl_text{std::to_string(load.ttl.count())},
          quorum{config.nodes.size() / 2 + 1},
          wake_prefix{config.queue_prefix + "wake:"},
          cycles{make_cycles(config, load)},
          values{seed} {}

    cycle_plan plan;
    std::string ttl_text;
    std::size_t quorum;
    std::string wake_prefix;  ///< queue_prefix + "wake:", an argument of the release
    std::vector<raw_cycle> cycles;
    value_sequence values;
};

/// The arguments of round `kind` of `c` (views into `c`, `ttl` and `wake_prefix`).
struct round_argv {
    const char* argv[12];
    std::size_t lens[12];
    int argc = 0;
};

[[nodiscard]] inline auto round_arguments(round_kind kind, const raw_cycle& c,
                                          const std::string& ttl, const std::string& wake_prefix)
    -> round_argv {
    round_argv a;
    const auto args = [&](std::initializer_list<std::string_view> list) {
        for (const std::string_view s : list) {
            a.argv[a.argc] = s.data();
            a.lens[a.argc] = s.size();
            ++a.argc;
        }
    };
    switch (kind) {
        case round_kind::set:
            args({"SET", c.key, c.value, "NX", "PX", ttl});
            break;
        case round_kind::acquire_script:
            args({"EVALSHA", detail::acquire_script().sha, "2", c.key, c.fence_key, c.value, ttl,
                  "1"});
            break;
        case round_kind::confirm:
            args({"EVALSHA", detail::fence_confirm_script().sha, "2", c.key, c.fence_key, c.value,
                  c.token});
            break;
        case round_kind::extend:
            args({"EVALSHA", detail::extend_script().sha, "1", c.key, c.value, ttl});
            break;
        case round_kind::release:
            // A single resource's release also wakes its first waiter ("1"), so the
            // library sends this script even when nobody waits: so does the ceiling.
            args({"EVALSHA", detail::release_wake_script().sha, "4", c.key, c.queue_key, c.live_key,
                  c.offer_key, c.value, "1", wake_prefix, "", "w"});
            break;
    }
    return a;
}

/// RESP-encodes round `kind` of `c` with the hiredis formatter the library uses;
/// the caller frees `*out` with redisFreeSdsCommand. Returns the length.
[[nodiscard]] inline auto format_round(sds* out, round_kind kind, const raw_cycle& c,
                                       const std::string& ttl, const std::string& wake_prefix)
    -> int {
    round_argv a = round_arguments(kind, c, ttl, wake_prefix);
    return redisFormatSdsCommandArgv(out, a.argc, a.argv, a.lens);
}

/// The same round encoded by the library's own encoder (detail::encoded_command):
/// with --raw-encoder library, a like-for-like reference for instruction counts.
[[nodiscard]] inline auto encode_round(round_kind kind, const raw_cycle& c, const std::string& ttl,
                                       const std::string& wake_prefix) -> detail::encoded_command {
    const round_argv a = round_arguments(kind, c, ttl, wake_prefix);
    std::array<std::string_view, std::size(round_argv{}.lens)> views{};
    for (int i = 0; i < a.argc; ++i) views[static_cast<std::size_t>(i)] = {a.argv[i], a.lens[i]};
    return detail::encoded_command{
        std::span<const std::string_view>{views.data(), static_cast<std::size_t>(a.argc)}};
}

/// Checks one reply to round `kind` and folds in what the next round needs
/// (the fence counter). Returns an anomaly's name, or nullptr.
[[nodiscard]] inline auto absorb_reply(round_kind kind, const redisReply* r, raw_cycle& c) -> const
    char* {
    if (r == nullptr) return "raw:no_reply";
    if (r->type == REDIS_REPLY_ERROR) return "raw:error_reply";
    switch (kind) {
        case round_kind::set:
            if (r->type == REDIS_REPLY_NIL) return "raw:refused";
            return r->type == REDIS_REPLY_STATUS ? nullptr : "raw:unexpected_reply";
        case round_kind::acquire_script:
            // {1, counter}, or a refusal {0, counter, the index of the key held}.
            if (r->type != REDIS_REPLY_ARRAY || r->elements < 2) return "raw:unexpected_reply";
            if (r->element[1]->type == REDIS_REPLY_INTEGER && r->element[1]->integer > 0 &&
                static_cast<std::uint64_t>(r->element[1]->integer) > c.max_counter) {
                c.max_counter = static_cast<std::uint64_t>(r->element[1]->integer);
            }
            return r->element[0]->integer == 1 ? nullptr : "raw:refused";
        case round_kind::extend:  // the TTL the key has after the extend, at least 1
            if (r->type != REDIS_REPLY_INTEGER) return "raw:unexpected_reply";
            return r->integer >= 1 ? nullptr : "raw:refused";
        case round_kind::confirm:
        case round_kind::release:
            if (r->type != REDIS_REPLY_INTEGER) return "raw:unexpected_reply";
            return r->integer == 1 ? nullptr : "raw:refused";
    }
    return nullptr;
}

}  // namespace redlock::bench
