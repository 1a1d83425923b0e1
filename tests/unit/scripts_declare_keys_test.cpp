// Every key a script touches is one of its KEYS (README, "Key layout"): a key
// built inside Lua ("q .. '|' .. w") is invisible to the client, which cannot
// then tell which slot the call needs, and Redis Cluster refuses it. The check
// reads each script's source: every redis.call's key arguments must be
// KEYS[...] or a local bound only ever to KEYS[...].

#include "client/diagnostics_parse.hpp"
#include "client/election_commands.hpp"
#include "client/operator_commands.hpp"
#include "sansio/election_scripts.hpp"
#include "sansio/lock_listing.hpp"
#include "sansio/scripts.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

/// Which arguments of a command (after its name) are keys.
enum class key_args { none, first, all };

/// Every command the scripts call. One missing here fails the check, so that
/// a new command's key positions are decided, not guessed.
const std::map<std::string, key_args, std::less<>> commands{
    {"TIME", key_args::none},           {"PUBLISH", key_args::none},
    {"SPUBLISH", key_args::none},  // a shard channel, not a key
    {"GET", key_args::first},           {"SET", key_args::first},
    {"PTTL", key_args::first},          {"PEXPIRE", key_args::first},
    {"ZADD", key_args::first},          {"ZREM", key_args::first},
    {"ZRANGE", key_args::first},        {"ZSCORE", key_args::first},
    {"ZCARD", key_args::first},         {"ZREMRANGEBYSCORE", key_args::first},
    {"ZRANGEBYSCORE", key_args::first}, {"HGET", key_args::first},
    {"HSET", key_args::first},          {"XADD", key_args::first},
    {"HDEL", key_args::first},          {"DEL", key_args::all},
    {"HGETALL", key_args::first},       {"EXISTS", key_args::all},
    {"TYPE", key_args::first},
};

/// The source without its comments ("--" to the end of the line, outside strings).
auto without_comments(std::string_view lua) -> std::string {
    std::string out;
    char quote = 0;
    for (std::size_t i = 0; i < lua.size(); ++i) {
        const char c = lua[i];
        if (quote != 0) {
            out += c;
            if (c == '\\' && i + 1 < lua.size()) {
                out += lua[++i];
            } else if (c == quote) {
                quote = 0;
            }
        } else if (c == '-' && i + 1 < lua.size() && lua[i + 1] == '-') {
            while (i < lua.size() && lua[i] != '\n') ++i;
            out += '\n';
        } else {
            if (c == '\'' || c == '"') quote = c;
            out += c;
        }
    }
    return out;
}

auto trim(std::string_view s) -> std::string {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0)
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0)
        s.remove_suffix(1);
    return std::string{s};
}

/// `text` split at its top-level commas (outside brackets and strings). With
/// `stop_at_close`, ends at the ')' that closes an already opened '(' and
/// reports where in `end`.
auto split_arguments(std::string_view text, bool stop_at_close, std::size_t* end = nullptr)
    -> std::vector<std::string> {
    std::vector<std::string> parts;
    std::string current;
    int depth = 0;
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote != 0) {
            current += c;
            if (c == '\\' && i + 1 < text.size()) {
                current += text[++i];
            } else if (c == quote) {
                quote = 0;
            }
            continue;
        }
        if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '(' || c == '[' || c == '{') {
            ++depth;
        } else if (c == ')' || c == ']' || c == '}') {
            if (depth == 0 && stop_at_close) {
                parts.push_back(trim(current));
                if (end != nullptr) *end = i;
                return parts;
            }
            --depth;
        } else if (c == ',' && depth == 0) {
            parts.push_back(trim(current));
            current.clear();
            continue;
        }
        current += c;
    }
    parts.push_back(trim(current));
    if (end != nullptr) *end = text.size();
    return parts;
}

/// KEYS[...], whole: "KEYS[1]", "KEYS[#KEYS - 1]", "KEYS[4 + p]".
auto is_keys_element(std::string_view e) -> bool {
    if (!e.starts_with("KEYS[") || !e.ends_with(']')) return false;
    int depth = 0;
    for (std::size_t i = 4; i < e.size(); ++i) {
        if (e[i] == '[') ++depth;
        if (e[i] == ']' && --depth == 0) return i + 1 == e.size();
    }
    return false;
}

/// Every value each name is assigned anywhere in the script (`local a, b = x,
/// y` and `a = x`, at the start of a statement).
auto assignments(const std::string& lua) -> std::multimap<std::string, std::string> {
    static const std::regex statement{
        R"((?:^|\n|\bthen\b|\bdo\b|\belse\b|;)[ \t]*(?:local[ \t]+)?([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)[ \t]*=(?!=)([^\n]*))"};
    std::multimap<std::string, std::string> found;
    for (auto it = std::sregex_iterator{lua.begin(), lua.end(), statement};
         it != std::sregex_iterator{}; ++it) {
        const std::vector<std::string> names = split_arguments((*it)[1].str(), false);
        const std::vector<std::string> values = split_arguments((*it)[2].str(), false);
        for (std::size_t i = 0; i < names.size(); ++i)
            found.emplace(names[i], i < values.size() ? values[i] : std::string{"nil"});
    }
    return found;
}

/// Why each redis.call of `lua` may touch a key it was not given: empty when
/// every key argument is KEYS[...] or a local bound only to KEYS[...].
auto undeclared_keys(std::string_view source, std::size_t* calls = nullptr)
    -> std::vector<std::string> {
    const std::string lua = without_comments(source);
    const auto bound = assignments(lua);
    const auto declared = [&](const std::string& e) {
        if (is_keys_element(e)) return true;
        static const std::regex name{R"([A-Za-z_]\w*)"};
        if (!std::regex_match(e, name) || bound.count(e) == 0) return false;
        const auto [first, last] = bound.equal_range(e);
        return std::all_of(first, last, [](const auto& b) { return is_keys_element(b.second); });
    };
    std::vector<std::string> problems;
    static const std::regex call{R"(redis\.p?call[ \t]*\()"};
    std::size_t count = 0;
    for (auto it = std::sregex_iterator{lua.begin(), lua.end(), call}; it != std::sregex_iterator{};
         ++it) {
        ++count;
        const auto open = static_cast<std::size_t>(it->position() + it->length());
        std::size_t close = 0;
        const auto args = split_arguments(std::string_view{lua}.substr(open), true, &close);
        const std::string text = "redis.call(" + lua.substr(open, close) + ")";
        const std::string& name = args.front();
        if (name.size() < 2 || (name.front() != '\'' && name.front() != '"')) {
            problems.push_back(text + ": the command is not a literal");
            continue;
        }
        std::string command = name.substr(1, name.size() - 2);
        std::ranges::transform(command, command.begin(),
                               [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        const auto known = commands.find(command);
        if (known == commands.end()) {
            problems.push_back(text + ": " + command + " is not in the test's command table");
            continue;
        }
        const std::size_t last = known->second == key_args::none ? 0
                                 : known->second == key_args::first
                                     ? std::min<std::size_t>(1, args.size() - 1)
                                     : args.size() - 1;
        for (std::size_t i = 1; i <= last; ++i) {
            if (!declared(args[i]))
                problems.push_back(text + ": key argument '" + args[i] + "' is not KEYS[...]");
        }
    }
    if (calls != nullptr) *calls = count;
    return problems;
}

}  // namespace

TEST_SUITE("scripts declare their keys") {
    TEST_CASE("every script of the library names only keys given in KEYS") {
        std::vector<std::string_view> sources;
        for (const auto* s : redlock::detail::all_scripts()) sources.push_back(s->source);
        for (const auto s : redlock::detail::diagnostics_scripts()) sources.push_back(s);
        for (const auto s : redlock::detail::operator_scripts()) sources.push_back(s);
        for (const auto s : redlock::detail::election_scripts()) sources.push_back(s);
        sources.push_back(redlock::detail::listing_read_source());
        REQUIRE(sources.size() >= 15);
        std::size_t total = 0;
        for (const auto source : sources) {
            CAPTURE(source);
            std::size_t calls = 0;
            const auto problems = undeclared_keys(source, &calls);
            for (const auto& p : problems) FAIL_CHECK(p);
            CHECK(calls > 0);  // the scanner found the script's calls at all
            total += calls;
        }
        CHECK(total > 80);
    }

    TEST_CASE("a key built inside Lua is caught, however it is reached") {
        // Excerpts of the 0.1 scripts, which built the waiters' liveness keys,
        // the readers' set and a semaphore's permits from their KEYS.
        CHECK_FALSE(undeclared_keys(R"(local q, me = KEYS[3], ARGV[3]
redis.call('DEL', q .. '|' .. me))")
                        .empty());
        CHECK_FALSE(undeclared_keys(R"(local k = KEYS[1]
local readers = k .. '|readers'
redis.call('ZADD', readers, 'GT', 1, ARGV[1]))")
                        .empty());
        CHECK_FALSE(undeclared_keys("local left = redis.call('PTTL', ARGV[5] .. p)").empty());
        CHECK_FALSE(undeclared_keys(
                        "redis.call('ZRANGEBYSCORE', KEYS[1] .. '|readers', '(' .. now, '+inf')")
                        .empty());
        // A second key of DEL, a name also bound to something else, a parameter.
        CHECK_FALSE(undeclared_keys("redis.call('DEL', KEYS[1], KEYS[1] .. 'x')").empty());
        CHECK_FALSE(undeclared_keys(R"(local k = KEYS[1]
if x then k = ARGV[1] end
redis.call('GET', k))")
                        .empty());
        CHECK_FALSE(undeclared_keys("local function f(k) return redis.call('GET', k) end").empty());
        // A command the table does not know, and one that is not a literal.
        CHECK_FALSE(undeclared_keys("redis.call('RENAME', KEYS[1], KEYS[2])").empty());
        CHECK_FALSE(undeclared_keys("redis.call(ARGV[1], KEYS[1])").empty());
    }

    TEST_CASE("declared keys pass: KEYS elements, locals bound to them, non-key arguments") {
        CHECK(undeclared_keys(R"(local q, live = KEYS[#KEYS - 1], KEYS[#KEYS]
-- redis.call('GET', q .. 'x') in a comment is not a call
redis.call('HSET', live, ARGV[1] .. '|x', '1|' .. (now + 1))
redis.call('ZADD', q, 'NX', ARGV[2], ARGV[1])
redis.call('PTTL', KEYS[4 + p])
redis.call('DEL', KEYS[1], q)
redis.call('PUBLISH', ARGV[3] .. 'x', 'y')
local t = redis.call('TIME'))")
                  .empty());
    }
}
