#include "transport/cluster_router.hpp"

#include "sansio/command.hpp"
#include "transport/node_connection.hpp"

#include <algorithm>

namespace redlock::detail {
namespace {

constexpr std::uint32_t slots_tag = 1U << 31;  // routed_member::internal_tag
constexpr std::uint32_t subscription_tag = slots_tag | (1U << 30);
// After trouble, the map is read again this soon (not more often: a node that
// is down fails every request, and each would ask).
constexpr std::chrono::milliseconds trouble_refresh{100};

auto key_of(const std::string& host, std::uint16_t port) -> std::string {
    return host + ":" + std::to_string(port);
}

}  // namespace

cluster_router::cluster_router(const member_parts& parts, const cluster_member& member,
                               std::string name)
    : routed_member{parts, std::move(name), member.wait_replicas},
      member_{member},
      routing_{failover_quarantine()} {}

auto cluster_router::discovered(const std::string& host, std::uint16_t port) const -> node_address {
    node_address address;
    address.host = host;
    address.port = port;
    // Discovered nodes are reached like the first seed (TLS or not).
    address.tls = member_.seeds.empty() || member_.seeds.front().tls;
    return address;
}

auto cluster_router::connect(const std::string& host, std::uint16_t port) -> node_connection& {
    const std::string key = key_of(host, port);
    auto it = connections_.find(key);
    if (it != connections_.end()) return *it->second;
    auto c = open_connection(discovered(host, port), parts().config);
    c->expect(node_handshake::peer::cluster_node);
    node_connection& ref = *c;
    connections_.emplace(key, std::move(c));
    if (!closing_) ref.start();
    return ref;
}

void cluster_router::start() {
    for (const node_address& seed : member_.seeds) {
        if (seed.is_unix()) {
            // A seed on a Unix socket: its own connection, not shared by address.
            auto c = open_connection(seed, parts().config);
            c->expect(node_handshake::peer::cluster_node);
            seeds_.push_back(c.get());
            c->start();
            connections_.emplace(seed.to_string(), std::move(c));
            continue;
        }
        seeds_.push_back(&connect(seed.host, seed.port));
    }
    look_again();
}

void cluster_router::connect_new(const cluster_routing::change& c) {
    for (const std::size_t n : c.new_nodes) {
        const cluster_node& node = routing_.node(n);
        if (by_node_.size() <= n) by_node_.resize(n + 1, nullptr);
        by_node_[n] = &connect(node.host, node.port);
    }
    for (const std::string& note : c.notes)
        log_warning(parts().config, "redlock: " + name() + ": " + note);
}

void cluster_router::look_again() {
    if (closing_ || asks_out_ > 0) return;
    // The sources: the masters known, then the seeds; each with its host, which
    // names a node the answer announces with an empty host (a node that never met
    // another one does not know its own address).
    std::vector<slot_source> sources;
    for (std::size_t n = 0; n < by_node_.size(); ++n)
        if (routing_.is_master(n) && by_node_[n] != nullptr)
            sources.push_back({by_node_[n], routing_.node(n).host});
    for (std::size_t i = 0; i < seeds_.size(); ++i) {
        const auto known = [&](const slot_source& s) { return s.from == seeds_[i]; };
        if (std::none_of(sources.begin(), sources.end(), known))
            sources.push_back({seeds_[i], member_.seeds[i].host});
    }
    if (sources.empty()) return;
    // Without a map, every source at once: the first good answer maps the member,
    // and a seed that is down (or a replica's stale view) costs no turn. With one,
    // a refresh asks the next source in turn.
    asked_.clear();
    round_errors_.clear();
    round_mapped_ = false;
    if (routing_.mapped()) {
        asked_.push_back(sources[next_source_++ % sources.size()]);
    } else {
        asked_ = std::move(sources);
    }
    asks_out_ = asked_.size();
    for (std::size_t i = 0; i < asked_.size(); ++i) {
        asked_[i].from->send(encoded_command{"CLUSTER", "SLOTS"}.bytes(), this,
                             slots_tag | static_cast<std::uint32_t>(i));
    }
    look_again_after(member_.refresh_interval);
}

void cluster_router::on_internal(std::uint32_t tag, const reply_event& event) {
    if ((tag & subscription_tag) == subscription_tag) {
        // An SSUBSCRIBE refused (MOVED: the slot moved meanwhile): look again.
        if (event.status == request_status::reply && is_error(event.answer))
            look_again_after(trouble_refresh);
        // ["ssubscribe", channel, count]: that channel is heard from now on.
        const reply* kind = element_of(event.answer, 0);
        const reply* channel = element_of(event.answer, 1);
        if (kind != nullptr && channel != nullptr && kind->text == "ssubscribe") {
            if (auto it = watched_.find(std::string{channel->text}); it != watched_.end())
                it->second.confirmed = true;
        }
        return;
    }
    const std::size_t i = tag & ~slots_tag;
    if (asks_out_ > 0) --asks_out_;
    if (closing_ || i >= asked_.size()) return;
    on_slots(asked_[i], event);
}

void cluster_router::on_slots(const slot_source& source, const reply_event& event) {
    slot_layout layout;
    if (event.status == request_status::reply) {
        layout = read_cluster_slots(event.answer, source.host);
    } else {
        layout.error = std::string{event.cause};
    }
    // An empty map (a node not yet joined, or a cluster being built) is no map.
    if (layout.error.empty() && layout.ranges.empty())
        layout.error = "CLUSTER SLOTS answered an empty slot map";
    if (!layout.error.empty()) {
        // Errors name the node asked: "127.0.0.1:7001: is not in cluster mode …".
        last_error_ = source.from->name() + ": " + layout.error;
        round_errors_.push_back(last_error_);
        if (asks_out_ > 0 || round_mapped_) return;
        // Every source of the round failed: what waits for a map fails now, told
        // why each source did.
        if (!routing_.mapped()) {
            gave_up_ = true;
            fail_parked("no slot map from any seed (" + joined_errors() + ")");
        }
        look_again_after(std::max(parts().config.reconnect.min_delay, trouble_refresh));
        return;
    }
    // Of a round that asked every source, the first good answer counts; the
    // others may be staler views (a replica's).
    if (round_mapped_) return;
    round_mapped_ = true;
    look_again_after(member_.refresh_interval);
    const cluster_routing::change c = routing_.apply(layout, std::chrono::steady_clock::now());
    connect_new(c);
    set_up(true);
    // Connections for nodes the map names that were already open (seeds).
    for (std::size_t n = 0; n < routing_.node_count(); ++n) {
        if (by_node_.size() <= n) by_node_.resize(n + 1, nullptr);
        if (by_node_[n] == nullptr)
            by_node_[n] = &connect(routing_.node(n).host, routing_.node(n).port);
    }
    dispatch_parked();
    for (const auto& [channel, w] : watched_) subscribe_where_due(channel);
}

auto cluster_router::joined_errors() const -> std::string {
    std::string text;
    for (const std::string& e : round_errors_) text += (text.empty() ? "" : "; ") + e;
    return text;
}

auto cluster_router::subscriber(std::size_t n) -> node_connection& {
    auto& slot = subscribers_[n];
    if (slot) return *slot;
    slot =
        open_connection(discovered(routing_.node(n).host, routing_.node(n).port), parts().config);
    // The handshake's SUBSCRIBE (this client's classic channel) puts the connection in
    // pub/sub mode; the shard channels follow, and again after every reconnect.
    slot->subscribe(wake_channel(), on_wake());
    slot->on_identified([this, n] {
        for (auto& [channel, w] : watched_) {
            if (w.at != n) continue;
            w.confirmed = false;
            subscribers_[n]->send(encoded_command{"SSUBSCRIBE", channel}.bytes(), this,
                                  subscription_tag);
        }
    });
    if (!closing_) slot->start();
    return *slot;
}

void cluster_router::subscribe_where_due(const std::string& channel) {
    auto it = watched_.find(channel);
    if (it == watched_.end() || closing_) return;
    watched& w = it->second;
    const auto n = routing_.node_of(w.slot);
    if (!n || w.at == n) return;
    if (w.at) {
        if (auto old = subscribers_.find(*w.at); old != subscribers_.end())
            old->second->send(encoded_command{"SUNSUBSCRIBE", channel}.bytes(), this,
                              subscription_tag);
    }
    w.at = *n;
    w.confirmed = false;
    subscriber(*n).send(encoded_command{"SSUBSCRIBE", channel}.bytes(), this, subscription_tag);
}

void cluster_router::watch(const std::string& channel, std::uint16_t slot, bool on) {
    if (closing_) return;
    if (on) {
        watched_[channel] = watched{slot, std::nullopt};
        subscribe_where_due(channel);
        return;
    }
    const auto it = watched_.find(channel);
    if (it == watched_.end()) return;
    if (it->second.at) {
        if (auto s = subscribers_.find(*it->second.at); s != subscribers_.end())
            s->second->send(encoded_command{"SUNSUBSCRIBE", channel}.bytes(), this,
                            subscription_tag);
    }
    watched_.erase(it);
}

auto cluster_router::settling(std::uint16_t slot) const noexcept -> bool {
    if (!routing_.mapped()) return !gave_up_;
    const node_connection* c = serving(slot);
    return c != nullptr && c->settling();
}

auto cluster_router::hears_wakeups() const noexcept -> bool {
    for (const auto& [channel, w] : watched_)
        if (!w.confirmed) return false;
    return true;
}

auto cluster_router::connection_for(std::uint16_t slot, std::string& why, bool& park)
    -> node_connection* {
    if (!routing_.mapped()) {
        park = true;
        return nullptr;
    }
    const auto n = routing_.node_of(slot);
    if (n && *n < by_node_.size() && by_node_[*n] != nullptr) [[likely]]
        return by_node_[*n];
    unrouted(slot, why);
    return nullptr;
}

void cluster_router::unrouted(std::uint16_t slot, std::string& why) {
    // Out of line: the message costs the per-request path nothing.
    why = "slot " + std::to_string(slot) + " is served by no node of " + name();
    look_again_after(trouble_refresh);
}

auto cluster_router::redirected(const redirection& r) -> node_connection* {
    std::string host = r.host;
    if (host.empty()) {
        // "MOVED 3999 :6381": the host the command went to.
        const auto n = routing_.node_of(r.slot);
        host = n ? routing_.node(*n).host : std::string{};
    }
    if (host.empty()) return nullptr;
    if (r.how == redirection::kind::ask) return &connect(host, r.port);
    const cluster_routing::change c =
        routing_.moved(r.slot, host, r.port, std::chrono::steady_clock::now());
    connect_new(c);
    const auto n = routing_.node_of(r.slot);
    return n && *n < by_node_.size() ? by_node_[*n] : nullptr;
}

void cluster_router::trouble(std::uint16_t slot) {
    (void)slot;
    look_again_after(trouble_refresh);
}

auto cluster_router::quarantined_until(std::uint16_t slot) const noexcept
    -> std::chrono::steady_clock::time_point {
    auto until = routing_.quarantined_until(slot);
    // A master that restarted without persistence: node_connection's own rule.
    if (const auto n = routing_.node_of(slot); n && *n < by_node_.size() && by_node_[*n] != nullptr)
        until = std::max(until, by_node_[*n]->quarantined_until());
    return until;
}

auto cluster_router::topology() const -> std::vector<std::string> {
    std::vector<std::string> lines;
    const auto now = std::chrono::steady_clock::now();
    if (!routing_.mapped()) {
        lines.push_back("no slot map yet" + (last_error_.empty() ? "" : " (" + last_error_ + ")"));
        return lines;
    }
    for (std::size_t n = 0; n < routing_.node_count(); ++n) {
        if (!routing_.is_master(n)) continue;
        unsigned count = 0;
        for (unsigned s = 0; s < 16384; ++s)
            if (routing_.node_of(static_cast<std::uint16_t>(s)) == n) ++count;
        const node_connection* c = n < by_node_.size() ? by_node_[n] : nullptr;
        std::string line = "master " + routing_.node(n).address() + ": " + std::to_string(count) +
                           " slots" + (c != nullptr && c->connected() ? "" : ", not connected");
        const std::vector<std::string> replicas = routing_.replicas_of(n);
        line += replicas.empty() ? std::string{", no replica"} : ", replicas";
        for (const std::string& r : replicas) line.append(" ").append(r);
        lines.push_back(std::move(line));
    }
    if (const std::string q = routing_.quarantined_slots(now); !q.empty())
        lines.push_back("in quarantine (a failover): slots " + q);
    return lines;
}

auto cluster_router::connections() const -> std::vector<const node_connection*> {
    std::vector<const node_connection*> out;
    for (const auto& [key, c] : connections_) out.push_back(c.get());
    return out;
}

void cluster_router::close(std::function<void()> done) {
    if (closing_) return;
    closing_ = true;
    stop_looking();
    stop_all();
    on_closed_ = std::move(done);
    closes_pending_ = static_cast<int>(connections_.size() + subscribers_.size());
    if (closes_pending_ == 0) {
        if (on_closed_) std::exchange(on_closed_, nullptr)();
        return;
    }
    const auto closed_one = [this] {
        if (--closes_pending_ == 0 && on_closed_) std::exchange(on_closed_, nullptr)();
    };
    for (auto& [key, c] : connections_) c->close(closed_one);
    for (auto& [n, c] : subscribers_) c->close(closed_one);
}

}  // namespace redlock::detail
