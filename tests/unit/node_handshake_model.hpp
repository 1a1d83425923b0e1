#pragma once
// A node that answers what node_handshake sends, without sockets: the commands the
// handshake writes are parsed back from their RESP bytes, answered from canned replies
// chosen by the node's settings, and the replies parsed into replies for
// on_reply. Used by node_handshake_test.cpp.

#include "sansio/command.hpp"
#include "sansio/node_handshake.hpp"
#include "sansio/reply.hpp"
#include "sansio/scripts.hpp"
#include "transport/reply_reader.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock_test {

using redlock::detail::reply_ptr;

/// Every complete RESP value in `bytes` (commands are arrays of bulk strings).
inline auto parse_resp(std::string_view bytes) -> std::vector<reply_ptr> {
    // Plain checks, not doctest assertions: the exhaustive tests parse millions of these.
    redlock::detail::reply_reader reader;
    if (!reader.feed(bytes.data(), bytes.size())) FAIL("not RESP: " << reader.error());
    std::vector<reply_ptr> out;
    for (;;) {
        reply_ptr r;
        if (!reader.next(r)) FAIL("not RESP: " << reader.error());
        if (r == nullptr) break;
        out.push_back(std::move(r));
    }
    if (reader.unparsed() != 0) FAIL("a RESP value cut short");
    return out;
}

using command = std::vector<std::string>;

inline auto bulk(std::string_view s) -> std::string {
    return "$" + std::to_string(s.size()) + "\r\n" + std::string{s} + "\r\n";
}

inline auto index_of_sha(std::string_view sha) -> std::optional<std::size_t> {
    const auto scripts = redlock::detail::all_scripts();
    for (std::size_t i = 0; i < scripts.size(); ++i) {
        if (scripts[i]->sha == sha) return i;
    }
    return std::nullopt;
}

/// How the node answers each handshake command.
struct node_model {
    enum class exists_mode { answer, error, malformed };
    /// redis7: both sections; syntax_error: Redis before 7; first_only: the server section
    /// only; no_run_id: both sections, without run_id (in plain INFO too).
    enum class info_mode { redis7, syntax_error, first_only, no_run_id };
    enum class config_mode { always, everysec, error };

    std::string password;      ///< what AUTH must carry
    std::vector<bool> cached;  ///< per all_scripts(); empty: all cached
    exists_mode exists = exists_mode::answer;
    bool load_fails = false;
    info_mode info = info_mode::redis7;
    bool plain_info_fails = false;
    std::string run_id = std::string(40, 'a');
    bool aof = false;
    bool server_time = true;         ///< INFO server holds server_time_usec (Redis 6.2 and later)
    std::string version = "7.0.15";  ///< INFO server's redis_version
    bool info_says_loading = false;  ///< INFO reports loading:1, the other commands work
    config_mode config = config_mode::always;
    bool subscribe_fails = false;
    std::string role = "master";            ///< INFO replication's role: "master" or "slave"
    std::string cluster_enabled = "0";      ///< INFO cluster's cluster_enabled; "" leaves it out
    std::optional<std::size_t> loading_at;  ///< this reply (0-based) is a LOADING error
    std::size_t answered = 0;

    auto info_text(bool server, bool persistence) const -> std::string {
        std::string text;
        if (server) {
            text += "# Server\r\nredis_version:" + version + "\r\n";
            if (info != info_mode::no_run_id) text += "run_id:" + run_id + "\r\n";
            // Not TIME's answer below, so a test can tell which one the handshake kept.
            if (server_time) text += "server_time_usec:1700000000654321\r\n";
            text += "tcp_port:6379\r\n";
        }
        if (persistence) {
            text += "\r\n# Persistence\r\nloading:" + std::string{info_says_loading ? "1" : "0"} +
                    "\r\naof_enabled:" + (aof ? "1" : "0") + "\r\n";
            text += "\r\n# Replication\r\nrole:" + role + "\r\n";
            if (role == "slave") text += "master_host:127.0.0.1\r\nmaster_port:7001\r\n";
            if (!cluster_enabled.empty())
                text += "\r\n# Cluster\r\ncluster_enabled:" + cluster_enabled + "\r\n";
        }
        return bulk(text);
    }

    auto answer(const command& c) -> std::string {
        if (loading_at && *loading_at == answered++) {
            return "-LOADING Redis is loading the dataset in memory\r\n";
        }
        const std::string name = c.at(0);
        if (name == "AUTH") {
            return c.back() == password ? "+OK\r\n"
                                        : "-WRONGPASS invalid username-password pair or user "
                                          "is disabled.\r\n";
        }
        if (name == "SCRIPT" && c.at(1) == "EXISTS") {
            if (exists == exists_mode::error) return "-ERR unknown command 'SCRIPT'\r\n";
            if (exists == exists_mode::malformed) return ":1\r\n";
            std::string out = "*" + std::to_string(c.size() - 2) + "\r\n";
            for (std::size_t i = 2; i < c.size(); ++i) {
                const auto index = index_of_sha(c[i]);
                out += index && (cached.empty() || cached.at(*index)) ? ":1\r\n" : ":0\r\n";
            }
            return out;
        }
        if (name == "SCRIPT" && c.at(1) == "LOAD") {
            if (load_fails) return "-ERR Error compiling script\r\n";
            return bulk(std::string(40, 'f'));
        }
        if (name == "INFO" && c.size() == 1) {
            if (plain_info_fails) return "-ERR unknown command 'INFO'\r\n";
            return info_text(true, true);
        }
        if (name == "INFO") {
            if (info == info_mode::syntax_error) return "-ERR syntax error\r\n";
            return info_text(true, info != info_mode::first_only);
        }
        if (name == "CONFIG") {
            if (config == config_mode::error) return "-ERR unknown command 'CONFIG'\r\n";
            return "*2\r\n" + bulk("appendfsync") +
                   bulk(config == config_mode::always ? "always" : "everysec");
        }
        if (name == "PING") return "+PONG\r\n";
        if (name == "TIME") return "*2\r\n" + bulk("1700000000") + bulk("123456");
        if (name == "SUBSCRIBE") {
            if (subscribe_fails) return "-NOPERM this user has no permissions\r\n";
            return "*3\r\n" + bulk("subscribe") + bulk(c.at(1)) + ":1\r\n";
        }
        FAIL("unexpected command " << name);
        return {};
    }
};

/// What one handshake did, played to its end against a node_model.
struct handshake_run {
    redlock::detail::node_handshake::verdict result =
        redlock::detail::node_handshake::verdict::pending;
    std::string cause;
    std::vector<std::string> warnings;
    std::vector<std::vector<command>> rounds;  ///< the commands written, per round
    std::size_t replies = 0;                   ///< replies fed, the ignored ones included
    std::string problems;                      ///< broken rules of the protocol, if any
};

/// Plays one handshake: writes, answers, feeds every reply of every round (also those
/// after a failure, which must be ignored), until no round follows.
inline auto play(redlock::detail::node_handshake& hs, const redlock::client_config& config,
                 node_model& node, std::string_view channel = {}) -> handshake_run {
    using verdict = redlock::detail::node_handshake::verdict;
    handshake_run run;
    std::string out;
    std::deque<redlock::detail::request_fifo::request> requests;
    hs.begin(config, channel, out, requests, nullptr, 0);
    std::vector<std::uint32_t> tags;
    for (const auto& r : requests) tags.push_back(r.tag);
    while (!tags.empty()) {
        const auto written = parse_resp(out);
        if (written.size() != tags.size()) run.problems += "commands and tags differ; ";
        std::vector<command> round;
        for (const auto& w : written) {
            command c;
            for (const auto* e : w->elements) c.emplace_back(e->text);
            round.push_back(std::move(c));
        }
        run.rounds.push_back(round);
        std::vector<std::uint32_t> next_tags;
        std::string next_out;
        for (std::size_t i = 0; i < round.size(); ++i) {
            const auto replies = parse_resp(node.answer(round[i]));
            if (replies.size() != 1) FAIL("not one reply to " << round[i].at(0));
            ++run.replies;
            const auto s = hs.on_reply(
                tags.at(i), {redlock::detail::request_status::reply, replies[0].get(), {}});
            const bool last = i + 1 == round.size();
            if (run.result != verdict::pending) {
                if (s.result != verdict::pending || !s.warning.empty() || !s.tags.empty())
                    run.problems += "a reply after the end was not ignored; ";
                continue;
            }
            if (!s.warning.empty()) run.warnings.push_back(s.warning);
            if (!s.tags.empty()) {
                if (!last || s.result != verdict::pending) run.problems += "early round; ";
                next_tags = s.tags;
                next_out = s.send;
            }
            if (s.result == verdict::done && !last) run.problems += "done too early; ";
            if (s.result != verdict::pending) {
                run.result = s.result;
                run.cause = s.cause;
            }
        }
        tags = std::move(next_tags);
        out = std::move(next_out);
    }
    if (run.result == verdict::pending) run.problems += "it never ended; ";
    return run;
}

}  // namespace redlock_test
