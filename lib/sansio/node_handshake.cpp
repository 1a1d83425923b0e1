#include "sansio/node_handshake.hpp"

#include "sansio/clock_watch.hpp"
#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "sansio/scripts.hpp"

#include <charconv>
#include <optional>

namespace redlock::detail {
namespace {

auto find_info_field(std::string_view text, std::string_view field)
    -> std::optional<std::string_view> {
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
    return std::nullopt;
}

/// An INFO reply we can read fields from: text, not an error.
auto info_text(const reply* r) -> std::optional<std::string_view> {
    if (r == nullptr || (r->kind != reply_kind::string && r->kind != reply_kind::status))
        return std::nullopt;
    return reply_text(r);
}

}  // namespace

auto info_field(std::string_view text, std::string_view field) -> std::string_view {
    return find_info_field(text, field).value_or(std::string_view{});
}

auto has_info_field(std::string_view text, std::string_view field) -> bool {
    return find_info_field(text, field).has_value();
}

void node_handshake::begin(const client_config& config, std::string_view channel, std::string& out,
                           std::deque<request_fifo::request>& requests, reply_sink* sink,
                           std::uint64_t deadline) {
    const std::size_t before = requests.size();
    const auto add = [&](std::uint32_t tag) {
        requests.push_back(request_fifo::request{.sink = sink, .tag = tag, .deadline = deadline});
    };
    first_round_ = true;
    password_ = config.password.reveal();
    subscriber_ = !channel.empty();
    subscribed_ = false;
    missing_.assign(all_scripts().size(), false);
    info_fallback_ = false;
    new_run_id_.clear();
    aof_ = false;
    appendfsync_.clear();
    node_time_.reset();
    if (!config.password.empty()) {
        if (config.username.empty()) {
            append_command(out, {"AUTH", config.password.reveal()});
        } else {
            append_command(out, {"AUTH", config.username, config.password.reveal()});
        }
        add(auth_tag);
    }
    if (peer_ == peer::sentinel && !subscriber_) {
        // A sentinel is asked questions, never given locks: a PING proves it answers.
        append_command(out, {"PING"});
        add(ping_tag);
    } else if (subscriber_) {
        // A subscriber needs nothing else: its SUBSCRIBE is answered in order,
        // and every message after it is pushed.
        append_command(out, {"SUBSCRIBE", channel});
        add(subscribe_tag);
    } else {
        // One question for every script instead of a SCRIPT LOAD each: a node
        // that has them (the usual case, a fresh process on a long-lived
        // server) is sent nothing more about them.
        std::vector<std::string_view> exists{"SCRIPT", "EXISTS"};
        for (const script* s : all_scripts()) exists.push_back(s->sha);
        append_command(out, exists);
        add(script_exists_tag);
        // replication: never lock on a replica; cluster: a member of the wrong kind. Its
        // server section also holds the node's clock (server_time_usec), so TIME is asked
        // only of a server whose INFO did not say it (second_round).
        append_command(out, {"INFO", "server", "persistence", "replication", "cluster"});
        add(info_tag);
    }
    replies_left_ = requests.size() - before;
}

auto node_handshake::on_reply(std::uint32_t tag, const reply_event& event) -> step {
    step s;
    if (replies_left_ == 0) return s;  // a stale reply of an abandoned handshake
    if (event.status != request_status::reply) {
        // Dropped or stopping: the connection is already failing for that cause.
        fail(s, std::string{event.cause});
        return s;
    }
    s = answer(tag, event.answer);
    if (s.result == verdict::failed || --replies_left_ > 0) return s;
    if (first_round_ && !subscriber_ && peer_ != peer::sentinel) second_round(s);
    if (replies_left_ == 0) s.result = verdict::done;
    return s;
}

auto node_handshake::answer(std::uint32_t tag, const reply* r) -> step {
    step s;
    // A node still loading its data set cannot serve locks yet: come back later.
    if (is_loading(r)) {
        fail(s, "still loading its data set");
        return s;
    }
    switch (tag) {
        case auth_tag:
            if (is_error(r)) {
                // Never echo the password. Redis's error text does not contain
                // it, but a proxy or a fake server might quote the command.
                std::string text = describe_reply(r);
                if (!password_.empty() && text.find(password_) != std::string::npos) {
                    text = "(the server's error text quotes the password: withheld)";
                }
                fail(s, "AUTH failed: " + text);
            }
            break;
        case ping_tag:
            if (is_error(r)) fail(s, "PING failed: " + describe_reply(r));
            break;
        case subscribe_tag:
            subscribed_ = !is_error(r);
            if (!subscribed_) {
                s.warning = "SUBSCRIBE failed: " + describe_reply(r) +
                            "; waiters fall back to their TTL-based wake-up";
            }
            break;
        case script_exists_tag:
            scripts_reply(r, s);
            break;
        case script_load_tag:
            // Not fatal: EVALSHA falls back to EVAL. But a node that cannot run
            // scripts cannot release locks, and the operator should hear of it.
            if (is_error(r)) s.warning = "SCRIPT LOAD failed: " + describe_reply(r);
            break;
        case time_tag:
            // Not fatal either way: without it, this node's clock is not watched.
            node_time_ = time_of(r);
            break;
        case config_fsync_tag:
            // CONFIG may be disabled or renamed: then persistence is unknown,
            // and unknown is treated as "may lose writes".
            if (is_array(r, 2)) {
                appendfsync_ = std::string{reply_text(r->elements[1])};
            }
            break;
        default:
            info_reply(tag, r, s);
            break;
    }
    return s;
}

void node_handshake::scripts_reply(const reply* r, step& s) {
    const std::size_t count = missing_.size();
    if (is_error(r)) {
        // Loading them would fail alike (scripting disabled, SCRIPT refused by
        // an ACL or a proxy); EVALSHA still falls back to EVAL on NOSCRIPT.
        s.warning = "SCRIPT EXISTS failed: " + describe_reply(r) +
                    "; no script is loaded ahead, calls fall back to EVAL";
        return;
    }
    if (!is_array(r, count)) {
        // Not Redis's answer: load them all, as every handshake once did.
        missing_.assign(count, true);
        return;
    }
    for (std::size_t i = 0; i < count; ++i) missing_[i] = !is_integer(r->elements[i], 1);
}

void node_handshake::node_time_from_info(std::string_view text) {
    // Redis 7 updates the time it reports at each command's start (earlier servers may report
    // the time cached at their last cron, up to 100 ms stale, which the clock-step check would
    // take for a step), so the field is taken from Redis 7 and later only (Valkey says 7 too).
    const std::string_view version = info_field(text, "redis_version");
    int major = 0;
    const auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), major);
    if (ec != std::errc{} || end == version.data() || major < 7) return;
    if (const std::string_view usec = info_field(text, "server_time_usec"); !usec.empty())
        node_time_ = info_time_us(usec);
}

void node_handshake::info_reply(std::uint32_t tag, const reply* r, step& s) {
    const std::optional<std::string_view> text = info_text(r);
    // INFO answers while a node loads; the first round's SCRIPT EXISTS says
    // LOADING then, and this says it again in case a server answered that.
    if (text && info_field(*text, "loading") == "1") {
        fail(s, "still loading its data set");
        return;
    }
    if (text) node_time_from_info(*text);
    if (tag == info_tag) {
        // Redis before 7 refuses INFO with two sections (a syntax error), and
        // other servers may answer only the first: then ask for plain INFO,
        // whose default sections hold both fields, in the second round.
        if (!text || !has_info_field(*text, "run_id") || !has_info_field(*text, "aof_enabled")) {
            info_fallback_ = true;
            return;
        }
    } else if (!text || !has_info_field(*text, "run_id")) {
        if (!identity_warned_) {
            identity_warned_ = true;
            s.warning = "cannot read its run_id (" +
                        (text ? std::string{"no run_id in INFO"} : describe_reply(r)) +
                        "): a restart of this node cannot be detected";
        }
        if (!text) return;
    }
    if (!text) return;
    if (!check_role(*text, s)) return;
    new_run_id_ = std::string{info_field(*text, "run_id")};
    aof_ = info_field(*text, "aof_enabled") == "1";
}

auto node_handshake::check_role(std::string_view text, step& s) -> bool {
    // A replica refuses writes, or (replica-read-only no) takes them and loses
    // them at its next sync: never a place to lock. A Sentinel member re-resolves
    // its master when this fails. A cluster node is different: a seed is only
    // where the slot map is read (a replica answers CLUSTER SLOTS as well), and a
    // cluster replica answers a write for a slot it does not own with MOVED to the
    // master, so a master demoted by a failover or a replica seed takes no lock.
    if (info_field(text, "role") == "slave" && peer_ != peer::cluster_node) {
        std::string of{info_field(text, "master_host")};
        if (!of.empty()) of.append(":").append(info_field(text, "master_port"));
        fail(s, "is a replica (role:slave" + (of.empty() ? "" : ", of " + of) +
                    "): a quorum member must be a master");
        return false;
    }
    const std::string_view cluster = info_field(text, "cluster_enabled");
    if (cluster.empty()) return true;  // an older server or a proxy: not told, not refused
    if (cluster == "1" && peer_ != peer::cluster_node) {
        fail(s,
             "is a Redis Cluster node (cluster_enabled:1): list it as a seed of a \"clusters\" "
             "member, not under \"nodes\"");
        return false;
    }
    if (cluster != "1" && peer_ == peer::cluster_node) {
        fail(s,
             "is not in cluster mode (cluster_enabled:0): a seed of a \"clusters\" member "
             "must be a Redis Cluster node; list a standalone master under \"nodes\"");
        return false;
    }
    return true;
}

void node_handshake::second_round(step& s) {
    first_round_ = false;
    const auto scripts = all_scripts();
    for (std::size_t i = 0; i < scripts.size(); ++i) {
        if (!missing_[i]) continue;
        append_command(s.send, {"SCRIPT", "LOAD", scripts[i]->source});
        s.tags.push_back(script_load_tag);
    }
    if (info_fallback_) {
        // AOF is not known yet: its CONFIG GET goes along rather than in a
        // third round (on old servers only; the answer is ignored without AOF).
        append_command(s.send, {"INFO"});
        s.tags.push_back(info_all_tag);
    }
    // The clock, from a server whose INFO did not give it (before Redis 7, or not Redis):
    // TIME, which node_trust compares with the local monotonic clock across handshakes and
    // renewals.
    if (!node_time_) {
        append_command(s.send, {"TIME"});
        s.tags.push_back(time_tag);
    }
    // Only a node with AOF on can persist every write; without AOF the
    // fsync policy does not matter, and the default handshake skips it.
    if (info_fallback_ || aof_) {
        append_command(s.send, {"CONFIG", "GET", "appendfsync"});
        s.tags.push_back(config_fsync_tag);
    }
    replies_left_ = s.tags.size();
}

void node_handshake::fail(step& s, std::string cause) {
    replies_left_ = 0;
    s.result = verdict::failed;
    s.cause = std::move(cause);
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
