#include "support/cluster_member.hpp"

#include "sansio/hash_slot.hpp"
#include "support/cluster_view.hpp"

#include <hiredis/hiredis.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace redlock_test {

using namespace std::chrono_literals;

namespace {

constexpr auto settle_limit = 10s;
// Failure detection (node_timeout), the FAIL vote, the election delay (0.5-1 s) and a
// restarted master's 2 s before it serves again, on a loaded machine.
constexpr auto failure_limit = 20s;
constexpr auto poll_period = 50ms;

auto node_options(const cluster_member_options& options) -> server_options {
    if (options.shards < 1 || options.shards > 3) {
        throw std::invalid_argument("cluster_member: shards must be 1..3");
    }
    if (options.replicas < 0 || options.replicas > 1) {
        throw std::invalid_argument("cluster_member: replicas must be 0..1");
    }
    auto node = options.server;
    // A full resynchronisation starts at once instead of waiting 5 s for more replicas.
    node.extra_args.insert(node.extra_args.end(), {"--repl-diskless-sync-delay", "0"});
    if (!node.password.empty()) {
        node.extra_args.insert(node.extra_args.end(), {"--masterauth", node.password});
        if (!node.username.empty()) {
            node.extra_args.insert(node.extra_args.end(), {"--masteruser", node.username});
        }
    }
    if (node.tls) {
        // Without --tls-cluster a TLS-only node would announce port 0 in CLUSTER SLOTS.
        node.extra_args.insert(node.extra_args.end(),
                               {"--tls-cluster", "yes", "--tls-replication", "yes"});
        // A node connecting to another (bus, replication, MIGRATE) is a TLS client: with
        // --tls-auth-clients it must present a certificate fit for client authentication.
        if (!node.tls->client_cert_file.empty()) {
            node.extra_args.insert(node.extra_args.end(),
                                   {"--tls-client-cert-file", node.tls->client_cert_file,
                                    "--tls-client-key-file", node.tls->client_key_file});
        }
    }
    return node;
}

auto port_text(const redis_server& s) -> std::string {
    return std::to_string(s.port());
}

}  // namespace

cluster_member::cluster_member(cluster_member_options options) : options_{std::move(options)} {
    const auto node = node_options(options_);
    const auto count = static_cast<std::size_t>(options_.shards * (1 + options_.replicas));
    nodes_.reserve(count);
    const auto mode = server_mode::cluster_node_with(options_.node_timeout);
    for (std::size_t i = 0; i < count; ++i) nodes_.emplace_back(node, mode);
    create();
}

void cluster_member::create() {
    const auto shards = static_cast<std::size_t>(options_.shards);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        ids_.push_back(nodes_[i].command({"CLUSTER", "MYID"}).value_or(""));
        // Distinct epochs up front, as redis-cli does: no collision to resolve later.
        run_ok(i, {"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(i + 1)});
    }
    for (std::size_t i = 0; i < shards; ++i) {
        run_ok(i, {"CLUSTER", "ADDSLOTSRANGE",
                   std::to_string(i * redlock::detail::cluster_slots / shards),
                   std::to_string((i + 1) * redlock::detail::cluster_slots / shards - 1)});
    }
    for (std::size_t i = 1; i < nodes_.size(); ++i) {
        run_ok(i, {"CLUSTER", "MEET", "127.0.0.1", port_text(nodes_[0]),
                   std::to_string(nodes_[0].cluster_bus_port())});
    }
    // CLUSTER REPLICATE needs the master known; wait until everyone knows everyone.
    const auto deadline = std::chrono::steady_clock::now() + settle_limit;
    for (;;) {
        bool all_met = true;
        for (const auto& n : nodes_) {
            const auto view = parse_cluster_nodes(n.command({"CLUSTER", "NODES"}).value_or(""));
            std::size_t known = 0;
            for (const auto& e : view) known += e.unsettled ? 0 : 1;
            all_met = all_met && known == nodes_.size();
        }
        if (all_met) break;
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error("cluster_member: the nodes did not all meet within 10 s:" +
                                     describe(take_reports(nodes_)));
        }
        std::this_thread::sleep_for(poll_period);
    }
    for (std::size_t i = shards; i < nodes_.size(); ++i) {
        run_ok(i, {"CLUSTER", "REPLICATE", ids_[i - shards]});
    }
    await_settled(settle_limit, [&] {
        for (std::size_t i = shards; i < nodes_.size(); ++i) {
            if (role(i) != "slave") return false;
        }
        return true;
    });
}

void cluster_member::run_ok(std::size_t i, const std::vector<std::string>& argv) const {
    const auto reply = nodes_.at(i).command(argv);
    if (reply != "OK") {
        std::string text;
        for (const auto& a : argv) text += a + " ";
        throw std::runtime_error("cluster_member: node " + std::to_string(i) + " (port " +
                                 port_text(nodes_[i]) + ") answered " + text + "with " +
                                 reply.value_or("(nil)"));
    }
}

void cluster_member::check_index(std::size_t i, const char* what) const {
    if (i >= nodes_.size()) {
        throw std::logic_error(std::string{"cluster_member::"} + what + ": no node " +
                               std::to_string(i) + " (there are " + std::to_string(size()) + ")");
    }
}

auto cluster_member::answering(std::size_t i) const -> bool {
    return nodes_[i].running() && !nodes_[i].frozen();
}

auto cluster_member::any_answering() const -> const redis_server& {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (answering(i)) return nodes_[i];
    }
    throw std::logic_error("cluster_member: no node is running");
}

auto cluster_member::index_of_port(std::uint16_t port) const -> std::size_t {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i].port() == port) return i;
    }
    throw std::runtime_error("cluster_member: no node on port " + std::to_string(port));
}

auto cluster_member::is_master(std::size_t i) const -> bool {
    return answering(i) && role(i) == "master";
}

auto cluster_member::seeds() const -> std::vector<redlock::node_address> {
    std::vector<redlock::node_address> addresses;
    for (const auto& n : nodes_) addresses.push_back(n.address());
    return addresses;
}

auto cluster_member::master_of_slot(std::uint16_t slot) const -> std::size_t {
    const auto view =
        parse_cluster_nodes(any_answering().command({"CLUSTER", "NODES"}).value_or(""));
    const auto* owner = owner_of(view, slot);
    if (owner == nullptr) {
        throw std::runtime_error("cluster_member: no node serves slot " + std::to_string(slot));
    }
    return index_of_port(owner->port);
}

auto cluster_member::replica_of(std::size_t master) const -> std::size_t {
    check_index(master, "replica_of");
    const auto view =
        parse_cluster_nodes(any_answering().command({"CLUSTER", "NODES"}).value_or(""));
    for (const auto& e : view) {
        if (e.master || e.master_id != ids_[master] || e.failed) continue;
        const auto i = index_of_port(e.port);
        if (nodes_[i].running()) return i;
    }
    throw std::logic_error("cluster_member: node " + std::to_string(master) +
                           " has no running replica");
}

auto cluster_member::role(std::size_t i) const -> std::string {
    check_index(i, "role");
    const auto reply = nodes_[i].command({"ROLE"}).value_or("");
    return reply.substr(0, reply.find('\n'));
}

auto cluster_member::key_slot(const std::string& key) const -> std::uint16_t {
    const auto reply = any_answering().command({"CLUSTER", "KEYSLOT", key}).value_or("-");
    if (reply.starts_with('-')) throw std::runtime_error("CLUSTER KEYSLOT " + key + ": " + reply);
    return static_cast<std::uint16_t>(std::stoi(reply));
}

void cluster_member::move_slot(std::uint16_t slot, std::size_t to) {
    check_index(to, "move_slot");
    if (master_of_slot(slot) == to) return;
    begin_move_slot(slot, to);
    finish_move_slot(slot, to);
}

void cluster_member::begin_move_slot(std::uint16_t slot, std::size_t to) {
    check_index(to, "begin_move_slot");
    if (!is_master(to)) {
        throw std::logic_error("cluster_member: node " + std::to_string(to) + " is no master");
    }
    const auto from = master_of_slot(slot);
    if (from == to) {
        throw std::logic_error("cluster_member: node " + std::to_string(to) +
                               " already serves slot " + std::to_string(slot));
    }
    const auto s = std::to_string(slot);
    run_ok(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", ids_[from]});
    run_ok(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", ids_[to]});
    moving_[slot] = move{.from = from, .to = to};
}

auto cluster_member::migrate_keys(std::uint16_t slot, std::size_t count) -> std::size_t {
    const auto moving = moving_.find(slot);
    if (moving == moving_.end()) {
        throw std::logic_error("cluster_member::migrate_keys: slot " + std::to_string(slot) +
                               " is not being moved (begin_move_slot first)");
    }
    const auto& source = nodes_[moving->second.from];
    const auto& target = nodes_[moving->second.to];
    const auto keys =
        source.query({"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), std::to_string(count)});
    if (keys->type != REDIS_REPLY_ARRAY) {
        throw std::runtime_error("CLUSTER GETKEYSINSLOT: not an array");
    }
    if (keys->elements == 0) return 0;
    std::vector<std::string> argv{"MIGRATE", "127.0.0.1", port_text(target), "", "0", "5000"};
    const auto& o = target.options();
    if (!o.password.empty() && o.username.empty()) argv.insert(argv.end(), {"AUTH", o.password});
    if (!o.password.empty() && !o.username.empty()) {
        argv.insert(argv.end(), {"AUTH2", o.username, o.password});
    }
    argv.emplace_back("KEYS");
    for (std::size_t i = 0; i < keys->elements; ++i) {
        argv.emplace_back(keys->element[i]->str, keys->element[i]->len);
    }
    const auto reply = source.command(argv);
    // NOKEY: every listed key expired or was deleted between GETKEYSINSLOT (which lists an
    // expired key until something touches it) and MIGRATE; a lock's key does that by design.
    if (reply != "OK" && reply != "NOKEY") {
        throw std::runtime_error("MIGRATE: " + reply.value_or("(nil)"));
    }
    return keys->elements;
}

void cluster_member::finish_move_slot(std::uint16_t slot, std::size_t to) {
    const auto moving = moving_.find(slot);
    if (moving == moving_.end() || moving->second.to != to) {
        throw std::logic_error("cluster_member::finish_move_slot: slot " + std::to_string(slot) +
                               " is not being moved to node " + std::to_string(to));
    }
    const auto from = moving->second.from;
    while (migrate_keys(slot, 100) > 0) {
    }
    const auto s = std::to_string(slot);
    // The target first: it bumps its epoch and claims the slot, so that the source, told
    // next, does not send its clients back and forth.
    run_ok(to, {"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
    run_ok(from, {"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (i != to && i != from && is_master(i))
            run_ok(i, {"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
    }
    moving_.erase(moving);
    await_settled(settle_limit, [&] { return master_of_slot(slot) == to; });
}

void cluster_member::manual_failover(std::size_t master) {
    check_index(master, "manual_failover");
    const auto replica = replica_of(master);
    await_settled(settle_limit);  // its link must be up, or the replica refuses
    run_ok(replica, {"CLUSTER", "FAILOVER"});
    await_settled(settle_limit,
                  [&] { return role(replica) == "master" && role(master) == "slave"; });
}

void cluster_member::forced_failover(std::size_t master,
                                     const std::function<void(std::size_t)>& on_promoted) {
    check_index(master, "forced_failover");
    const auto replica = replica_of(master);
    nodes_[master].crash();
    // A failover needs the votes of a majority of all masters: with fewer than 3, the
    // survivors are no majority, and only a takeover promotes the replica.
    if (options_.shards < 3) run_ok(replica, {"CLUSTER", "FAILOVER", "TAKEOVER"});
    if (on_promoted) {
        const auto deadline = std::chrono::steady_clock::now() + failure_limit;
        while (role(replica) != "master" && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds{1});
        if (role(replica) == "master") on_promoted(replica);
    }
    await_settled(failure_limit, [&] { return role(replica) == "master"; });
}

void cluster_member::restart_node(std::size_t i) {
    check_index(i, "restart_node");
    nodes_[i].restart();
    await_settled(failure_limit);
}

void cluster_member::await_settled(std::chrono::milliseconds limit) const {
    await_settled(limit, [] { return true; });
}

void cluster_member::await_settled(std::chrono::milliseconds limit,
                                   const std::function<bool()>& also) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        auto reports = take_reports(nodes_);
        auto reason = unsettled_reason(reports);
        if (reason.empty() && !also()) reason = "the operation has not taken effect yet";
        if (reason.empty()) return;
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error(
                "cluster_member: the cluster did not settle within " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) +
                " s (" + reason + "); the nodes report:" + describe(reports));
        }
        std::this_thread::sleep_for(poll_period);
    }
}

auto cluster_member::get(const std::string& key) const -> std::optional<std::string> {
    return nodes_[master_of_slot(key_slot(key))].get(key);
}

auto cluster_member::pttl(const std::string& key) const -> long long {
    return nodes_[master_of_slot(key_slot(key))].pttl(key);
}

auto cluster_member::exists(const std::string& key) const -> bool {
    return nodes_[master_of_slot(key_slot(key))].exists(key);
}

auto lock_key(const std::string& resource) -> std::string {
    return "redlock:" + redlock::detail::tagged_resource(resource);
}

}  // namespace redlock_test
