#include "detail/node_handshake.hpp"

#include "detail/command.hpp"
#include "detail/scripts.hpp"

namespace redlock::detail {

auto info_field(std::string_view text, std::string_view field) -> std::string_view {
    while (!text.empty()) {
        const auto eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.size() > field.size() && line.starts_with(field) && line[field.size()] == ':') {
            return line.substr(field.size() + 1);
        }
        if (eol == std::string_view::npos) break;
        text.remove_prefix(eol + 1);
    }
    return {};
}

void node_handshake::begin(const client_config& config, std::string_view channel, std::string& out,
                           std::deque<request_fifo::request>& requests, reply_sink* sink,
                           std::uint64_t deadline) {
    const auto add = [&](std::uint32_t tag) {
        requests.push_back(request_fifo::request{sink, tag, false, deadline});
    };
    subscribed_ = false;
    new_run_id_.clear();
    aof_ = false;
    appendfsync_.clear();
    if (!config.password.empty()) {
        if (config.username.empty()) {
            append_command(out, {"AUTH", config.password.reveal()});
        } else {
            append_command(out, {"AUTH", config.username, config.password.reveal()});
        }
        add(auth_tag);
    }
    if (!channel.empty()) {
        // A subscriber needs nothing else: its SUBSCRIBE is answered in order,
        // and every message after it is pushed.
        append_command(out, {"SUBSCRIBE", channel});
        add(subscribe_tag);
        replies_left_ = requests.size();
        return;
    }
    for (const script* s : all_scripts()) {
        append_command(out, {"SCRIPT", "LOAD", s->source});
        add(script_load_tag);
    }
    append_command(out, {"INFO", "server"});
    add(info_server_tag);
    append_command(out, {"INFO", "persistence"});
    add(info_persistence_tag);
    append_command(out, {"CONFIG", "GET", "appendfsync"});
    add(config_fsync_tag);
    replies_left_ = requests.size();
}

auto node_handshake::on_reply(std::uint32_t tag, const reply_event& event) -> step {
    step s;
    if (replies_left_ == 0) return s;  // a stale reply of an abandoned handshake
    if (event.status != request_status::reply) {
        // Dropped or stopping: the connection is already failing for that cause.
        replies_left_ = 0;
        s.result = verdict::failed;
        s.cause = std::string{event.cause};
        return s;
    }
    const redisReply* r = event.reply;
    // A node still loading its data set cannot serve locks yet: come back later.
    if (is_loading(r)) {
        replies_left_ = 0;
        s.result = verdict::failed;
        s.cause = "still loading its data set";
        return s;
    }
    switch (tag) {
        case auth_tag:
            if (is_error(r)) {
                // Never echo the password; the server's error text does not contain it.
                replies_left_ = 0;
                s.result = verdict::failed;
                s.cause = "AUTH failed: " + describe_reply(r);
                return s;
            }
            break;
        case subscribe_tag:
            subscribed_ = !is_error(r);
            if (!subscribed_) {
                s.warning = "SUBSCRIBE failed: " + describe_reply(r) +
                            "; waiters fall back to their TTL-based wake-up";
            }
            break;
        case script_load_tag:
            // Not fatal: EVALSHA falls back to EVAL. But a node that cannot run
            // scripts cannot release locks, and the operator should hear of it.
            if (is_error(r)) s.warning = "SCRIPT LOAD failed: " + describe_reply(r);
            break;
        default:
            s = identity_reply(tag, event);
            break;
    }
    if (--replies_left_ == 0) s.result = verdict::done;
    return s;
}

auto node_handshake::identity_reply(std::uint32_t tag, const reply_event& event) -> step {
    step s;
    const redisReply* r = event.reply;
    if (tag == info_server_tag) {
        if (is_error(r)) {
            if (!identity_warned_) {
                identity_warned_ = true;
                s.warning = "cannot read its run_id (" + describe_reply(r) +
                            "): a restart of this node cannot be detected";
            }
            return s;
        }
        new_run_id_ = std::string{info_field(reply_text(r), "run_id")};
    } else if (tag == info_persistence_tag) {
        aof_ = info_field(reply_text(r), "aof_enabled") == "1";
    } else if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
        appendfsync_ = std::string{reply_text(r->element[1])};
    }
    // CONFIG may be disabled or renamed: then persistence is unknown, and
    // unknown is treated as "may lose writes".
    return s;
}

auto node_handshake::settle_identity(const client_config& config) -> restart {
    restart out;
    if (new_run_id_.empty()) return out;
    const bool restarted = !run_id_.empty() && new_run_id_ != run_id_;
    run_id_ = new_run_id_;
    if (!restarted) return out;
    out.restarted = true;
    const bool persists = aof_ && appendfsync_ == "always";
    const auto quarantine = config.restart_quarantine.value_or(config.lock.ttl);
    if (persists || quarantine <= std::chrono::milliseconds{0}) {
        out.warning =
            "restarted (new run_id); it persists every write, so its grants count at once";
        return out;
    }
    out.quarantine = quarantine;
    out.warning =
        "restarted (new run_id) without persisting every write (appendonly yes + appendfsync "
        "always): its grants are not counted for " +
        std::to_string(quarantine.count()) + " ms, the delayed-restart rule";
    return out;
}

}  // namespace redlock::detail
