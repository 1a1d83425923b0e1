#include "support/sentinel_member.hpp"

#include <hiredis/hiredis.h>

#include <map>
#include <stdexcept>
#include <thread>

namespace redlock_test {

using namespace std::chrono_literals;

namespace {

constexpr std::size_t sentinel_count = 3;
constexpr auto settle_limit = 15s;
// Down-after (1 s), the quorum's agreement, a leader election (which a split vote delays)
// and the promotion, on a loaded machine.
constexpr auto failure_limit = 20s;
constexpr auto poll_period = 50ms;

using fields = std::map<std::string, std::string>;

/// A flat array of names and values (SENTINEL MASTER, one entry of SENTINEL REPLICAS).
auto as_fields(const redisReply& r) -> fields {
    fields out;
    if (r.type != REDIS_REPLY_ARRAY) return out;
    for (std::size_t i = 0; i + 1 < r.elements; i += 2) {
        const auto& name = *r.element[i];
        const auto& value = *r.element[i + 1];
        if (name.type != REDIS_REPLY_STRING && name.type != REDIS_REPLY_STATUS) continue;
        out[std::string{name.str, name.len}] =
            value.str != nullptr ? std::string{value.str, value.len} : std::string{};
    }
    return out;
}

/// Each element of an array of flat arrays (SENTINEL REPLICAS, SENTINEL SENTINELS).
auto as_field_list(const redisReply& r) -> std::vector<fields> {
    std::vector<fields> out;
    if (r.type != REDIS_REPLY_ARRAY) return out;
    for (std::size_t i = 0; i < r.elements; ++i) out.push_back(as_fields(*r.element[i]));
    return out;
}

auto info_field(const std::string& text, const std::string& name) -> std::string {
    const auto at = text.find(name + ":");
    if (at == std::string::npos) return {};
    const auto value = text.substr(at + name.size() + 1);
    return value.substr(0, value.find_first_of("\r\n"));
}

/// A TLS client certificate for the connections a server or Sentinel opens itself (replication,
/// monitoring, Sentinel to Sentinel): with --tls-auth-clients the server certificate, made
/// for serverAuth only, would not do.
auto tls_client_args(const tls_listener& tls) -> std::vector<std::string> {
    if (tls.client_cert_file.empty()) return {};
    return {"--tls-client-cert-file", tls.client_cert_file, "--tls-client-key-file",
            tls.client_key_file};
}

auto data_options(const sentinel_member_options& options) -> server_options {
    auto data = options.server;
    // A full resynchronisation starts at once instead of waiting 5 s for more replicas.
    data.extra_args.insert(data.extra_args.end(), {"--repl-diskless-sync-delay", "0",
                                                   "--replica-announce-ip", "127.0.0.1"});
    if (!data.password.empty()) {
        data.extra_args.insert(data.extra_args.end(), {"--masterauth", data.password});
        if (!data.username.empty()) {
            data.extra_args.insert(data.extra_args.end(), {"--masteruser", data.username});
        }
    }
    if (data.tls) {
        const auto client = tls_client_args(*data.tls);
        data.extra_args.insert(data.extra_args.end(), {"--tls-replication", "yes"});
        data.extra_args.insert(data.extra_args.end(), client.begin(), client.end());
    }
    return data;
}

/// The sentinels: TLS-only like the servers when they are, and with nothing else of theirs.
auto sentinel_options(const sentinel_member_options& options) -> server_options {
    server_options sentinel;
    sentinel.tls = options.server.tls;
    return sentinel;
}

auto sentinel_config(const sentinel_member_options& options, std::uint16_t master_port)
    -> std::string {
    const auto& name = options.master_name;
    std::string text =
        "sentinel resolve-hostnames no\n"
        "sentinel announce-ip 127.0.0.1\n"
        "sentinel monitor " +
        name + " 127.0.0.1 " + std::to_string(master_port) +
        " 2\n"
        "sentinel down-after-milliseconds " +
        name +
        " 1000\n"
        "sentinel failover-timeout " +
        name +
        " 3000\n"
        "sentinel parallel-syncs " +
        name + " 1\n";
    if (options.server.tls) {
        // Sentinel speaks TLS to the servers and the other Sentinels with this one setting.
        text += "tls-replication yes\n";
        const auto& tls = *options.server.tls;
        if (!tls.client_cert_file.empty()) {
            text += "tls-client-cert-file " + tls.client_cert_file + "\ntls-client-key-file " +
                    tls.client_key_file + "\n";
        }
    }
    if (!options.server.password.empty()) {
        text += "sentinel auth-pass " + name + " " + options.server.password + "\n";
        if (!options.server.username.empty()) {
            text += "sentinel auth-user " + name + " " + options.server.username + "\n";
        }
    }
    return text;
}

}  // namespace

sentinel_member::sentinel_member(sentinel_member_options options) : options_{std::move(options)} {
    const auto data = data_options(options_);
    servers_.reserve(2);
    sentinels_.reserve(sentinel_count);
    servers_.emplace_back(data, server_mode::own_directory());
    auto replica = data;
    replica.extra_args.insert(replica.extra_args.end(),
                              {"--replicaof", "127.0.0.1", std::to_string(servers_[0].port())});
    servers_.emplace_back(replica, server_mode::own_directory());
    const auto config = sentinel_config(options_, servers_[0].port());
    for (std::size_t i = 0; i < sentinel_count; ++i) {
        sentinels_.emplace_back(sentinel_options(options_), server_mode::sentinel(config));
    }
    await_settled(0, settle_limit);
}

auto sentinel_member::sentinels() const -> std::vector<redlock::node_address> {
    std::vector<redlock::node_address> addresses;
    for (const auto& s : sentinels_) addresses.push_back(s.address());
    return addresses;
}

auto sentinel_member::index_of_port(std::uint16_t port) const -> std::size_t {
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        if (servers_[i].port() == port) return i;
    }
    throw std::runtime_error("sentinel_member: no server on port " + std::to_string(port));
}

auto sentinel_member::master_index() const -> std::size_t {
    for (const auto& s : sentinels_) {
        if (!s.running() || s.frozen()) continue;
        const auto reply = s.command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_name()});
        const auto text = reply.value_or("");
        const auto newline = text.find('\n');
        if (newline == std::string::npos) {
            throw std::runtime_error("SENTINEL GET-MASTER-ADDR-BY-NAME: " + text);
        }
        return index_of_port(static_cast<std::uint16_t>(std::stoi(text.substr(newline + 1))));
    }
    throw std::logic_error("sentinel_member: no Sentinel is running");
}

auto sentinel_member::unsettled_reason(std::size_t master) const -> std::string {
    const auto& m = servers_[master];
    const auto& r = servers_[1 - master];
    const auto master_port = std::to_string(m.port());
    const bool replica_runs = r.running() && !r.frozen();
    std::size_t sentinels_running = 0;
    for (const auto& s : sentinels_) sentinels_running += s.running() && !s.frozen() ? 1 : 0;
    try {
        if (!m.running()) return "server " + std::to_string(master) + " is not running";
        if (m.command({"ROLE"}).value_or("").rfind("master", 0) != 0) {
            return "server " + std::to_string(master) + " is no master";
        }
        if (replica_runs) {
            const auto info = r.command({"INFO", "replication"}).value_or("");
            if (info_field(info, "master_port") != master_port ||
                info_field(info, "master_link_status") != "up") {
                return "server " + std::to_string(1 - master) + " is no replica of " + master_port +
                       " with its link up";
            }
        }
        for (std::size_t i = 0; i < sentinels_.size(); ++i) {
            const auto& s = sentinels_[i];
            if (!s.running() || s.frozen()) continue;
            const auto who = "Sentinel " + std::to_string(i) + " ";
            const auto address =
                s.command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_name()}).value_or("");
            if (address != "127.0.0.1\n" + master_port) return who + "names " + address;
            const auto own = as_fields(*s.query({"SENTINEL", "MASTER", master_name()}));
            if (own.at("flags") != "master") return who + "flags the master " + own.at("flags");
            const auto others = as_field_list(*s.query({"SENTINEL", "SENTINELS", master_name()}));
            std::size_t known = 0;
            // "master_down" only says that Sentinel voted the master down lately (it lingers
            // 5 s after a failover); it is no trouble with the Sentinel itself.
            for (const auto& o : others) {
                known += o.at("flags") == "sentinel" || o.at("flags") == "sentinel,master_down";
            }
            if (known + 1 != sentinels_running) {
                return who + "knows " + std::to_string(known) + " other Sentinels";
            }
            if (!replica_runs) continue;
            bool knows_replica = false;
            for (const auto& e : as_field_list(*s.query({"SENTINEL", "REPLICAS", master_name()}))) {
                knows_replica =
                    knows_replica || (e.at("port") == std::to_string(r.port()) &&
                                      e.at("ip") == "127.0.0.1" && e.at("flags") == "slave");
            }
            if (!knows_replica) return who + "does not know the replica as a healthy one";
        }
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

auto sentinel_member::describe() const -> std::string {
    std::string text;
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        const auto& s = servers_[i];
        text += "\n  server " + std::to_string(i) + " (port " + std::to_string(s.port()) + "): ";
        try {
            const auto info = s.running() ? s.command({"INFO", "replication"}).value_or("") : "";
            text += !s.running() ? "down"
                                 : "role:" + info_field(info, "role") +
                                       " master_port:" + info_field(info, "master_port") +
                                       " link:" + info_field(info, "master_link_status");
        } catch (const std::exception& e) {
            text += e.what();
        }
    }
    for (std::size_t i = 0; i < sentinels_.size(); ++i) {
        const auto& s = sentinels_[i];
        text += "\n  Sentinel " + std::to_string(i) + " (port " + std::to_string(s.port()) + "): ";
        try {
            auto own = as_fields(*s.query({"SENTINEL", "MASTER", master_name()}));
            text += "master " + own["ip"] + ":" + own["port"] + " flags " + own["flags"] + ", " +
                    own["num-slaves"] + " replicas, " + own["num-other-sentinels"] +
                    " other Sentinels";
            for (const auto& e : as_field_list(*s.query({"SENTINEL", "REPLICAS", master_name()}))) {
                text += "; replica " + e.at("ip") + ":" + e.at("port") + " " + e.at("flags");
            }
        } catch (const std::exception& e) {
            text += e.what();
        }
    }
    return text;
}

void sentinel_member::await_settled(std::chrono::milliseconds limit) const {
    await_settled(master_index(), limit);
}

void sentinel_member::await_settled(std::size_t master, std::chrono::milliseconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        const auto reason = unsettled_reason(master);
        if (reason.empty()) return;
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error(
                "sentinel_member: not settled around server " + std::to_string(master) +
                " within " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) +
                " s (" + reason + "):" + describe());
        }
        std::this_thread::sleep_for(poll_period);
    }
}

void sentinel_member::demote(std::size_t i, std::size_t master) const {
    const auto reply =
        servers_[i].command({"REPLICAOF", "127.0.0.1", std::to_string(servers_[master].port())});
    if (reply != "OK") throw std::runtime_error("REPLICAOF: " + reply.value_or("(nil)"));
}

void sentinel_member::failover() {
    const auto from = master_index();
    const auto to = 1 - from;
    if (!servers_[to].running()) {
        throw std::logic_error("sentinel_member::failover: the replica is not running");
    }
    const auto deadline = std::chrono::steady_clock::now() + settle_limit;
    for (;;) {
        // The first running Sentinel; -NOGOODSLAVE while none has fresh news of the replica.
        std::string answer = "no Sentinel is running";
        for (const auto& s : sentinels_) {
            if (!s.running() || s.frozen()) continue;
            answer = s.command({"SENTINEL", "FAILOVER", master_name()}).value_or("(nil)");
            break;
        }
        if (answer == "OK") break;
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error("sentinel_member: SENTINEL FAILOVER answered " + answer);
        }
        std::this_thread::sleep_for(poll_period);
    }
    // Sentinel switches every Sentinel over; the old master it leaves alone for some 8 s.
    const auto switched = [&] {
        for (const auto& s : sentinels_) {
            if (!s.running() || s.frozen()) continue;
            const auto address =
                s.command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_name()}).value_or("");
            if (address != "127.0.0.1\n" + std::to_string(servers_[to].port())) return false;
        }
        return true;
    };
    while (!switched()) {
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error("sentinel_member: the Sentinels did not switch to server " +
                                     std::to_string(to) + " within 15 s:" + describe());
        }
        std::this_thread::sleep_for(poll_period);
    }
    demote(from, to);
    await_settled(to, settle_limit);
}

void sentinel_member::kill_master() {
    const auto from = master_index();
    servers_[from].crash();
    await_settled(1 - from, failure_limit);
}

void sentinel_member::restart_server(std::size_t i) {
    if (i >= servers_.size()) {
        throw std::logic_error("sentinel_member::restart_server: no server " + std::to_string(i));
    }
    const auto master = master_index();
    servers_[i].restart();
    if (i != master) demote(i, master);
    await_settled(master, failure_limit);
}

}  // namespace redlock_test
