// client::list's decisions: keys, pages, rounds and readings. The tally of
// what the nodes hold is in listing_tally.cpp.

#include "sansio/lock_listing.hpp"

#include "sansio/hash_slot.hpp"

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <utility>

namespace redlock::detail {
namespace {

// A read-only script: every key it reads is one of its KEYS. The time is the
// node's, as the readers' scores are: a reader whose hold has ended may still
// be in the set, and is left out.
constexpr std::string_view read_source = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 1, #KEYS do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  if kind == 'string' then
    out[i] = {1, redis.call('GET', KEYS[i]), redis.call('PTTL', KEYS[i])}
  elseif kind == 'zset' then
    local live = redis.call('ZRANGEBYSCORE', KEYS[i], '(' .. now, '+inf', 'WITHSCORES')
    local readers = {}
    for j = 1, #live, 2 do
      readers[#readers + 1] = live[j]
      readers[#readers + 1] = math.floor(tonumber(live[j + 1]) - now)
    end
    out[i] = {2, readers}
  else
    out[i] = {0}
  end
end
return out
)lua";

constexpr std::string_view readers_suffix = "|readers";
constexpr std::string_view permits_suffix = "|permits";
constexpr std::string_view permit_infix = "|permit|";

/// "0" to "1023": a permit's index as acquire writes it (no sign, no leading zero).
auto permit_index(std::string_view digits) -> std::optional<int> {
    if (digits.empty() || digits.size() > 4 || (digits.size() > 1 && digits.front() == '0') ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    int value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size() || value >= max_permits)
        return std::nullopt;
    return value;
}

auto ttl_of(const reply* r) -> std::optional<std::chrono::milliseconds> {
    const auto ms = integer_of(r);
    if (ms && *ms >= 0) return std::chrono::milliseconds{*ms};
    return std::nullopt;
}

auto text_of(const reply* r) -> std::optional<std::string> {
    if (r != nullptr && (r->kind == reply_kind::string || r->kind == reply_kind::status))
        return std::string{r->text};
    return std::nullopt;
}

auto counter_of(const std::optional<std::string>& text) -> std::optional<std::uint64_t> {
    if (!text) return std::nullopt;
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc{} || end != text->data() + text->size()) return std::nullopt;
    return value;
}

}  // namespace

auto parse_listed_key(std::string_view key, std::string_view key_prefix)
    -> std::optional<listed_key> {
    if (!key.starts_with(key_prefix)) return std::nullopt;
    const std::string_view rest = key.substr(key_prefix.size());
    const auto make = [&](std::string_view tagged, key_role role,
                          int permit) -> std::optional<listed_key> {
        if (!has_own_hash_tag(tagged)) return std::nullopt;
        return listed_key{std::string{key}, std::string{tagged}, untagged_resource(tagged), role,
                          permit};
    };
    if (rest.ends_with(readers_suffix)) {
        if (auto k =
                make(rest.substr(0, rest.size() - readers_suffix.size()), key_role::readers, -1))
            return k;
    }
    if (rest.ends_with(permits_suffix)) {
        if (auto k =
                make(rest.substr(0, rest.size() - permits_suffix.size()), key_role::permits, -1))
            return k;
    }
    if (const auto at = rest.rfind(permit_infix); at != std::string_view::npos) {
        if (const auto index = permit_index(rest.substr(at + permit_infix.size()))) {
            if (auto k = make(rest.substr(0, at), key_role::permit, *index)) return k;
        }
    }
    return make(rest, key_role::lock, -1);
}

auto glob_escaped(std::string_view text) -> std::string {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
        out.push_back(c);
    }
    return out;
}

auto listing_pattern(std::string_view key_prefix, std::string_view resource_prefix) -> std::string {
    if (resource_prefix.empty()) return glob_escaped(key_prefix) + "*";
    return glob_escaped(key_prefix) + "*" + glob_escaped(resource_prefix) + "*";
}

auto parse_scan_page(const reply* r) -> std::optional<scan_page> {
    const reply* cursor = element_of(r, 0);
    const reply* keys = element_of(r, 1);
    if (!is_array(r, 2) || cursor == nullptr || cursor->kind != reply_kind::string ||
        keys == nullptr || keys->kind != reply_kind::array)
        return std::nullopt;
    scan_page page;
    page.cursor = std::string{cursor->text};
    page.keys.reserve(keys->elements.size());
    for (const reply* k : keys->elements) {
        if (k == nullptr || k->kind != reply_kind::string) return std::nullopt;
        page.keys.emplace_back(k->text);
    }
    return page;
}

auto listing_read_source() -> std::string_view {
    return read_source;
}

auto read_command(const read_batch& batch, std::string_view fence_prefix)
    -> std::vector<std::string> {
    std::vector<std::string> command{"EVAL", std::string{read_source},
                                     std::to_string(batch.keys.size() + batch.fenced.size())};
    command.reserve(command.size() + batch.keys.size() + batch.fenced.size());
    for (const auto& k : batch.keys) command.push_back(k.name);
    for (const std::size_t i : batch.fenced)
        command.push_back(std::string{fence_prefix} + batch.keys[i].tagged);
    return command;
}

auto parse_read_reply(const read_batch& batch, const reply* r)
    -> std::optional<std::vector<key_reading>> {
    const std::size_t n = batch.keys.size();
    if (!is_array(r, n + batch.fenced.size())) return std::nullopt;
    std::vector<key_reading> readings(n);
    std::vector<bool> present(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        const reply* entry = r->elements[i];
        const auto tag = array_integer(entry, 0);
        if (!tag) return std::nullopt;
        readings[i].key = batch.keys[i];
        if (*tag == 1) {
            readings[i].value = text_of(element_of(entry, 1));
            readings[i].ttl = ttl_of(element_of(entry, 2));
            present[i] = readings[i].value.has_value();
        } else if (*tag == 2) {
            const reply* live = element_of(entry, 1);
            if (live == nullptr || live->kind != reply_kind::array) return std::nullopt;
            for (std::size_t j = 0; j + 1 < live->elements.size(); j += 2) {
                if (auto value = text_of(live->elements[j]))
                    readings[i].readers.push_back(
                        {std::move(*value), ttl_of(live->elements[j + 1])});
            }
            std::ranges::sort(readings[i].readers, {}, &node_reader::value);
            present[i] = true;
        }
    }
    for (std::size_t j = 0; j < batch.fenced.size(); ++j) {
        const reply* entry = r->elements[n + j];
        if (array_integer(entry, 0) == 1)
            readings[batch.fenced[j]].fence = counter_of(text_of(element_of(entry, 1)));
    }
    std::vector<key_reading> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (present[i]) out.push_back(std::move(readings[i]));
    }
    return out;
}

auto next_scan_step(const scan_page& page, std::string_view key_prefix,
                    std::string_view resource_prefix, std::size_t collected, std::size_t limit,
                    bool budget_spent) -> scan_step {
    scan_step step;
    for (const auto& name : page.keys) {
        auto key = parse_listed_key(name, key_prefix);
        if (!key || !key->resource.starts_with(resource_prefix)) continue;
        if (collected + step.batch.keys.size() >= limit) {
            step.stopped = scan_stop::limit;  // a key beyond the limit: there is more
            return step;
        }
        if (key->role == key_role::lock) step.batch.fenced.push_back(step.batch.keys.size());
        step.batch.keys.push_back(std::move(*key));
    }
    if (page.cursor == "0") return step;
    if (collected + step.batch.keys.size() >= limit) {
        step.stopped = scan_stop::limit;
    } else if (budget_spent) {
        step.stopped = scan_stop::budget;
    } else {
        step.more = true;
    }
    return step;
}

}  // namespace redlock::detail
