#include "transport/sentinel_router.hpp"

#include "sansio/command.hpp"
#include "transport/node_connection.hpp"

#include <algorithm>

namespace redlock::detail {
namespace {

constexpr std::uint32_t ask_tag = 1U << 31;  // routed_member::internal_tag
constexpr std::chrono::milliseconds trouble_ask{100};

}  // namespace

sentinel_router::sentinel_router(const member_parts& parts, const sentinel_member& member,
                                 std::string name)
    : routed_member{parts, std::move(name), member.wait_replicas},
      member_{member},
      sentinel_config_{parts.config} {
    sentinel_config_.username = member.sentinel_username;
    sentinel_config_.password = member.sentinel_password;
    sentinel_config_.password_env = member.sentinel_password_env;
}

void sentinel_router::start() {
    for (const node_address& s : member_.sentinels) {
        auto q = open_connection(s, sentinel_config_);
        q->expect(node_handshake::peer::sentinel);
        q->start();
        sentinels_.push_back(std::move(q));
        auto sub = open_connection(s, sentinel_config_);
        sub->subscribe("+switch-master", [this](std::string_view m) { on_switch_message(m); });
        sub->start();
        subscribers_.push_back(std::move(sub));
    }
    look_again();
}

void sentinel_router::look_again() {
    if (closing_ || asking_ || sentinels_.empty()) return;
    const std::size_t i = next_sentinel_ % sentinels_.size();
    asking_ = true;
    sentinels_[i]->send(
        encoded_command{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", member_.master_name}.bytes(), this,
        ask_tag | static_cast<std::uint32_t>(i));
    look_again_after(member_.refresh_interval);
}

void sentinel_router::on_internal(std::uint32_t tag, const reply_event& event) {
    asking_ = false;
    if (closing_) return;
    const std::size_t i = tag & 0xFFFFU;
    const std::string who =
        i < sentinels_.size() ? "sentinel " + sentinels_[i]->name() : std::string{"a sentinel"};
    master_lookup found;
    if (event.status == request_status::reply) {
        found = read_master_address(event.answer);
    } else {
        found.error = std::string{event.cause};
    }
    if (found.address) {
        failed_asks_ = 0;
        look_again_after(member_.refresh_interval);
        switch_to(*found.address, "named by " + who);
        return;
    }
    last_error_ = found.unknown ? who + " does not know a master named \"" + member_.master_name +
                                      "\" (SENTINEL GET-MASTER-ADDR-BY-NAME answered nil)"
                                : who + ": " + found.error;
    ++next_sentinel_;
    if (++failed_asks_ >= sentinels_.size() && !address_) {
        gave_up_ = true;
        fail_parked("no sentinel named the master (" + last_error_ + ")");
        log_warning(parts().config, "redlock: " + name() + ": " + last_error_);
        failed_asks_ = 0;
    }
    look_again_after(std::max(parts().config.reconnect.min_delay, trouble_ask));
}

void sentinel_router::on_switch_message(std::string_view payload) {
    if (closing_) return;
    if (const auto to = read_switch_master(payload, member_.master_name))
        switch_to(*to, "+switch-master");
}

void sentinel_router::switch_to(const master_address& address, std::string_view how) {
    if (address_ && *address_ == address) return;
    const bool failover = address_.has_value();
    node_address node;
    node.host = address.host;
    node.port = address.port;
    auto next = open_connection(node, parts().config);
    next->start();
    if (master_) {
        // Answers to what was sent to the old master still arrive, or time out.
        retire(std::move(master_), parts().config.connect_timeout + parts().config.request_timeout);
    }
    master_ = std::move(next);
    set_up(true);
    if (!wake_channel().empty()) {
        // Release notifications published on the master reach waiters of this client.
        auto subscriber = open_connection(node, parts().config);
        subscriber->subscribe(wake_channel(), on_wake());
        subscriber->start();
        if (master_subscriber_) retire(std::move(master_subscriber_), std::chrono::milliseconds{0});
        master_subscriber_ = std::move(subscriber);
    }
    const std::string was = address_ ? address_->host + ":" + std::to_string(address_->port) : "";
    address_ = address;
    if (failover) {
        const auto q = failover_quarantine();
        if (q.count() > 0) quarantined_until_ = std::chrono::steady_clock::now() + q;
        log_warning(parts().config, "redlock: " + name() + ": master moved from " + was + " to " +
                                        master_->name() + " (" + std::string{how} + ")" +
                                        (q.count() > 0 ? ": its grants are not counted for " +
                                                             std::to_string(q.count()) + " ms"
                                                       : ""));
    }
    dispatch_parked();
}

void sentinel_router::retire(std::unique_ptr<node_connection> c, std::chrono::milliseconds after) {
    retired_.push_back(std::move(c));
    auto it = std::prev(retired_.end());
    timers().schedule(after, [this, it] {
        if (closing_) return;  // close() closes it with the rest
        (*it)->close([this, it] {
            timers().schedule(std::chrono::milliseconds{0}, [this, it] { retired_.erase(it); });
        });
    });
}

auto sentinel_router::connection_for(std::uint16_t slot, std::string& why, bool& park)
    -> node_connection* {
    (void)slot;
    (void)why;
    if (!master_) {
        park = true;
        return nullptr;
    }
    return master_.get();
}

void sentinel_router::trouble(std::uint16_t slot) {
    (void)slot;
    look_again_after(trouble_ask);
}

auto sentinel_router::quarantined_until(std::uint16_t slot) const noexcept
    -> std::chrono::steady_clock::time_point {
    (void)slot;
    auto until = quarantined_until_;
    if (master_) until = std::max(until, master_->quarantined_until());
    return until;
}

auto sentinel_router::topology() const -> std::vector<std::string> {
    std::vector<std::string> lines;
    if (!master_) {
        lines.push_back("master \"" + member_.master_name + "\" not known yet" +
                        (last_error_.empty() ? "" : " (" + last_error_ + ")"));
    } else {
        lines.push_back("master \"" + member_.master_name + "\" at " + master_->name() +
                        (master_->connected() ? "" : ", not connected"));
    }
    std::size_t up = 0;
    for (const auto& s : sentinels_) up += s->connected() ? 1 : 0;
    lines.push_back(std::to_string(up) + " of " + std::to_string(sentinels_.size()) +
                    " sentinels answering");
    if (quarantined_until_ > std::chrono::steady_clock::now()) {
        lines.push_back("in quarantine (a failover) for another " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           quarantined_until_ - std::chrono::steady_clock::now())
                                           .count()) +
                        " ms");
    }
    return lines;
}

void sentinel_router::closed_one() {
    if (--closes_pending_ == 0 && on_closed_) std::exchange(on_closed_, nullptr)();
}

void sentinel_router::close(std::function<void()> done) {
    if (closing_) return;
    closing_ = true;
    stop_looking();
    stop_all();
    on_closed_ = std::move(done);
    closes_pending_ = 1;  // released below, once every close has been asked for
    const auto close_one = [this](node_connection& c) {
        ++closes_pending_;
        c.close([this] { closed_one(); });
    };
    for (auto& c : sentinels_) close_one(*c);
    for (auto& c : subscribers_) close_one(*c);
    if (master_) close_one(*master_);
    if (master_subscriber_) close_one(*master_subscriber_);
    for (auto& c : retired_) close_one(*c);
    closed_one();
}

}  // namespace redlock::detail
