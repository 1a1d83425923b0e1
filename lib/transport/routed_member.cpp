#include "transport/routed_member.hpp"

#include "sansio/command.hpp"
#include "sansio/member_reply.hpp"
#include "transport/callback_guard.hpp"
#include "transport/node_connection.hpp"

#include <utility>

namespace redlock::detail {
namespace {

// A connection's tag for one of our requests: its index, what it is, its round.
constexpr std::uint32_t index_mask = (1U << 20) - 1;
constexpr std::uint32_t wait_bit = 1U << 20;
constexpr std::uint32_t asking_bit = 1U << 21;
constexpr int round_shift = 22;
// A request's number for its sender: its index, and its generation above it.
constexpr int generation_shift = 20;
constexpr std::uint32_t generation_mask = 0x7FF;
// A request sent straight on a connection (the usual one) is numbered with this bit set, its
// connection's route id above the low 24 bits of its number there.
constexpr std::uint32_t direct_bit = 1U << 31;
constexpr int route_shift = 24;
constexpr std::uint32_t connection_mask = (1U << route_shift) - 1;

constexpr auto direct_number(std::uint8_t route, std::uint32_t number) -> std::uint32_t {
    return direct_bit | (static_cast<std::uint32_t>(route) << route_shift) |
           (number & connection_mask);
}

constexpr auto inner_tag(std::uint32_t index, std::uint8_t round, std::uint32_t bits)
    -> std::uint32_t {
    return index | bits | (static_cast<std::uint32_t>(round) << round_shift);
}

}  // namespace

routed_member::routed_member(const member_parts& parts, std::string name, int wait_replicas)
    : parts_{parts},
      name_{std::move(name)},
      report_name_{name_},
      wait_replicas_{wait_replicas},
      timers_{parts.timers},
      client_counters_{&parts.counters} {
    if (wait_replicas_ > 0) {
        // WAIT 0 would block forever: the timeout is at least 1 ms.
        const auto ms = std::max<std::int64_t>(1, parts.config.request_timeout.count());
        const std::string n = std::to_string(wait_replicas_);
        const std::string t = std::to_string(ms);
        append_command(wait_command_, {"WAIT", n, t});
    }
}

routed_member::~routed_member() {
    if (failing_timer_) timers_.cancel(*failing_timer_);
    stop_looking();
    set_up(false);
}

auto routed_member::send(std::string_view encoded, reply_sink* sink, std::uint32_t tag,
                         std::uint16_t slot, bool replicated) -> std::uint32_t {
    std::string why;
    bool park = false;
    node_connection* c = connection_for(slot, why, park);
    const bool waits = replicated && wait_replicas_ > 0;
    if (c != nullptr && !waits) {
        // The usual request: straight on the connection, with the operation's own sink. Only
        // an outcome that is not a plain answer comes here first (on_unusual).
        const std::uint8_t route = routes_.id_of(*c);
        if (route != route_ids::none) [[likely]] {
            const std::uint32_t n = c->send(encoded, sink, tag, request_watch{this, slot, route});
            return n == node_connection::no_request ? n : direct_number(route, n);
        }
    }
    const std::uint32_t index = take_index(sink, tag);
    if (index == no_index) return node_connection::no_request;
    request& r = requests_[index];
    r.slot = slot;
    r.replicated = waits;
    r.command.assign(encoded);
    place_or_park(index, c, park, std::move(why));
    return index | ((r.generation & generation_mask) << generation_shift);
}

auto routed_member::take_index(reply_sink* sink, std::uint32_t tag) -> std::uint32_t {
    std::uint32_t index = 0;
    if (free_.empty() && requests_.size() > index_mask) {
        // A tag holds 20 bits of index: beyond a million requests in flight on one
        // member, refuse (on a later turn, as every failure) rather than alias.
        overflow_.emplace_back(sink, tag);
        schedule_failures();
        return no_index;
    }
    if (!free_.empty()) {
        index = free_.back();
        free_.pop_back();
    } else {
        index = static_cast<std::uint32_t>(requests_.size());
        requests_.emplace_back();
    }
    request& r = requests_[index];
    ++r.generation;
    r.sink = sink;
    r.tag = tag;
    r.replicated = false;
    r.live = true;
    r.done = false;
    r.parked = false;
    r.round = 0;
    r.redirects = 0;
    r.owed = 0;
    r.origin = 0;
    r.holding = false;
    return index;
}

void routed_member::on_unusual(const watched_request& w, const reply_event& event) noexcept {
    call_guarded([&] {
        const member_reply_action a = decide_member_reply(event, {false, false, false, 0});
        if (a.refresh && !stopped_) trouble(w.slot);
        if (a.step == member_step::follow && !stopped_) {
            if (node_connection* to = redirected(*a.to)) {
                // Into the member's own table from now on, under the number the operation
                // knows (its origin), for a disown.
                const std::uint32_t index = take_index(w.sink, w.tag);
                if (index != no_index) {
                    request& r = requests_[index];
                    r.slot = w.slot;
                    r.command.assign(w.command);
                    r.origin = direct_number(w.route, w.number);
                    r.redirects = 1;
                    ++redirected_;
                    place(index, *to, a.to->how == redirection::kind::ask);
                }
                return;
            }
        }
        metrics_.count_failure(event);
        w.sink->on_reply(w.tag, event);
    });
}

auto routed_member::disown(std::uint32_t number, const reply_sink* sink) noexcept -> bool {
    if (number == node_connection::no_request) return false;
    if ((number & direct_bit) != 0) {
        node_connection* c =
            routes_.connection(static_cast<std::uint8_t>((number & ~direct_bit) >> route_shift));
        if (c != nullptr && c->disown(number, sink, connection_mask)) return true;
        return redirected_ > 0 && disown_redirected(number, sink);
    }
    const std::uint32_t index = number & index_mask;
    if (index >= requests_.size()) return false;
    request& r = requests_[index];
    if (!r.live || r.done || r.sink != sink ||
        (r.generation & generation_mask) != (number >> generation_shift)) {
        return false;
    }
    r.done = true;
    r.sink = nullptr;
    release_if_finished(index);
    return true;
}

auto routed_member::disown_redirected(std::uint32_t origin, const reply_sink* sink) noexcept
    -> bool {
    for (std::uint32_t i = 0; i < requests_.size(); ++i) {
        request& r = requests_[i];
        if (r.live && !r.done && r.origin == origin && r.sink == sink) {
            r.done = true;
            r.sink = nullptr;
            release_if_finished(i);
            return true;
        }
    }
    return false;
}

void routed_member::place(std::uint32_t index, node_connection& c, bool asking) {
    request& r = requests_[index];
    if (asking) {
        ++r.owed;
        c.send(encoded_command{"ASKING"}.bytes(), this, inner_tag(index, r.round, asking_bit));
    }
    ++r.owed;
    c.send(r.command, this, inner_tag(index, r.round, 0));
    if (r.replicated) {
        ++r.owed;
        c.send(wait_command_, this, inner_tag(index, r.round, wait_bit));
    }
}

void routed_member::on_reply(std::uint32_t tag, const reply_event& event) noexcept {
    // Only the member's own requests and its table's answers come here: the usual request's
    // answer goes from the connection to its operation directly (see send()).
    call_guarded([&] {
        if ((tag & internal_tag) != 0) {
            on_internal(tag, event);
            return;
        }
        const std::uint32_t index = tag & index_mask;
        if (index >= requests_.size()) return;
        --requests_[index].owed;
        answer(index, tag, event);
        release_if_finished(index);
    });
}

void routed_member::answer(std::uint32_t index, std::uint32_t tag, const reply_event& event) {
    request& r = requests_[index];
    const auto round = static_cast<std::uint8_t>(tag >> round_shift);
    if (r.done || round != r.round || (tag & asking_bit) != 0) return;
    const member_reply_action a =
        decide_member_reply(event, {(tag & wait_bit) != 0, r.holding, r.replicated, r.redirects});
    if (a.refresh) trouble(r.slot);
    switch (a.step) {
        case member_step::drop:
            return;
        case member_step::judge_held: {
            const replica_verdict v = replica_ack(event, wait_replicas_);
            if (v.counts) {
                forward(index, reply_event{request_status::reply, r.held.get(), {}});
            } else {
                forward(index, reply_event{request_status::unreachable, nullptr, v.cause});
            }
            return;
        }
        case member_step::hold:
            r.held = owned_reply{event.answer};
            r.holding = true;
            return;
        case member_step::follow:
            if (node_connection* to = redirected(*a.to)) {
                ++r.redirects;
                ++r.round;
                place(index, *to, a.to->how == redirection::kind::ask);
                return;
            }
            break;  // nowhere to go: the redirection is the answer
        case member_step::forward:
            break;
    }
    forward(index, event);
}

void routed_member::forward(std::uint32_t index, const reply_event& event) {
    request& r = requests_[index];
    r.done = true;
    r.holding = false;
    metrics_.count_failure(event);
    // Nothing of `r` is touched once the sink runs: it may send, and a new request can
    // move every request in memory. `held` keeps a held answer (the event's) alive.
    const owned_reply held = std::move(r.held);
    reply_sink* sink = std::exchange(r.sink, nullptr);
    const std::uint32_t tag = r.tag;
    if (sink != nullptr) sink->on_reply(tag, event);
}

void routed_member::release_if_finished(std::uint32_t index) {
    request& r = requests_[index];
    if (!r.live || !r.done || r.owed > 0 || r.parked) return;
    r.live = false;
    r.command.clear();
    if (r.origin != 0) --redirected_;
    r.origin = 0;
    free_.push_back(index);
}

void routed_member::fail_later(std::uint32_t index, std::string why) {
    failing_.emplace_back(index, std::move(why));
    schedule_failures();
}

void routed_member::schedule_failures() {
    if (failing_timer_) return;
    failing_timer_ = timers_.schedule(std::chrono::milliseconds{0}, [this] {
        failing_timer_.reset();
        for (auto& [sink, tag] : std::exchange(overflow_, {})) {
            sink->on_reply(tag, reply_event{request_status::unreachable, nullptr,
                                            "more than a million requests in flight"});
        }
        auto batch = std::exchange(failing_, {});
        for (auto& [i, cause] : batch) {
            if (!requests_[i].done) {
                forward(i, reply_event{request_status::unreachable, nullptr, cause});
            }
            release_if_finished(i);
        }
    });
}

auto routed_member::open_connection(node_address address, const client_config& config)
    -> std::unique_ptr<node_connection> {
    return std::make_unique<node_connection>(parts_.loop, parts_.batcher, std::move(address),
                                             config, parts_.rng, own_counters_, parts_.tls);
}

auto routed_member::failover_quarantine() const noexcept -> std::chrono::milliseconds {
    if (wait_replicas_ > 0) return std::chrono::milliseconds{0};
    return parts_.config.restart_quarantine.value_or(parts_.config.lock.ttl);
}

void routed_member::look_again_after(std::chrono::milliseconds delay) {
    if (looking_stopped_) return;
    const std::uint64_t due = timers_.now() + static_cast<std::uint64_t>(delay.count());
    if (look_timer_) {
        if (look_due_ <= due) return;
        timers_.cancel(*look_timer_);
    }
    look_due_ = due;
    look_timer_ = timers_.schedule(delay, [this] {
        look_timer_.reset();
        look_again();
    });
}

void routed_member::stop_looking() noexcept {
    looking_stopped_ = true;
    if (look_timer_) timers_.cancel(*look_timer_);
    look_timer_.reset();
}

void routed_member::dispatch_parked() {
    auto parked = std::exchange(parked_, {});
    for (const std::uint32_t i : parked) {
        request& r = requests_[i];
        r.parked = false;
        if (r.done) {
            release_if_finished(i);
            continue;
        }
        std::string why;
        bool park = false;
        node_connection* c = connection_for(r.slot, why, park);
        place_or_park(i, c, park, std::move(why));
    }
}

void routed_member::place_or_park(std::uint32_t index, node_connection* c, bool park,
                                  std::string why) {
    if (c != nullptr) {
        place(index, *c, false);
    } else if (park) {
        requests_[index].parked = true;
        parked_.push_back(index);
    } else {
        fail_later(index, std::move(why));
    }
}

void routed_member::fail_parked(const std::string& why) {
    auto parked = std::exchange(parked_, {});
    for (const std::uint32_t i : parked) {
        requests_[i].parked = false;
        fail_later(i, why);
    }
}

void routed_member::stop_all() noexcept {
    stopped_ = true;
    if (failing_timer_) {
        timers_.cancel(*failing_timer_);
        failing_timer_.reset();
    }
    failing_.clear();
    parked_.clear();
    // A pair, not a structured binding: clang 14 cannot capture one in a lambda.
    for (const auto& refused : std::exchange(overflow_, {})) {
        call_guarded([&] {
            refused.first->on_reply(refused.second, reply_event{request_status::stopped, nullptr,
                                                                "the client is shutting down"});
        });
    }
    for (std::uint32_t i = 0; i < requests_.size(); ++i) {
        request& r = requests_[i];
        r.parked = false;
        if (!r.live || r.done) continue;
        call_guarded([&] {
            forward(i,
                    reply_event{request_status::stopped, nullptr, "the client is shutting down"});
        });
    }
}

}  // namespace redlock::detail
