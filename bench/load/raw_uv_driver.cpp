#include "load/raw_uv_driver.hpp"

#include <hiredis/adapters/libuv.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace redlock::bench {

auto raw_uv_driver::create(const client_config& config, const workload& load)
    -> std::unique_ptr<raw_uv_driver> {
    std::unique_ptr<raw_uv_driver> d{new raw_uv_driver{config, load}};
    if (!d->connect_all(config)) return nullptr;
    return d;
}

raw_uv_driver::raw_uv_driver(const client_config& config, const workload& load)
    : load_{load},
      run_{config, load, (static_cast<std::uint64_t>(::getpid()) << 32) + 0x80000000ULL} {
    for (std::uint32_t i = 0; i < run_.cycles.size(); ++i) {
        for (std::uint32_t r = 0; r < run_.plan.rounds.size(); ++r)
            tags_.push_back(tag{this, i, r});
    }
}

auto raw_uv_driver::connect_all(const client_config& config) -> bool {
    uv_loop_init(&loop_);
    uv_async_init(&loop_, &kick_, [](uv_async_t* h) {
        auto& self = *static_cast<raw_uv_driver*>(h->data);
        self.active_ = static_cast<int>(self.run_.cycles.size());
        const auto now = steady::now();
        for (std::uint32_t i = 0; i < self.run_.cycles.size(); ++i) self.begin(i, now);
    });
    kick_.data = this;
    uv_async_init(&loop_, &stop_,
                  [](uv_async_t* h) { static_cast<raw_uv_driver*>(h->data)->stop_on_loop(); });
    stop_.data = this;
    for (const auto& address : config.nodes) {
        redisAsyncContext* c = address.is_unix()
                                   ? redisAsyncConnectUnix(address.unix_path.c_str())
                                   : redisAsyncConnect(address.host.c_str(), address.port);
        if (c == nullptr || c->err != 0) {
            std::fprintf(stderr, "redlock_load: raw-hiredis: cannot connect to %s\n",
                         address.to_string().c_str());
            return false;
        }
        c->data = this;
        redisLibuvAttach(c, &loop_);
        redisAsyncSetConnectCallback(c, &raw_uv_driver::on_connect);
        redisAsyncSetDisconnectCallback(c, &raw_uv_driver::on_disconnect);
        if (!config.password.empty()) {
            // Queued before anything else on the connection; a failure shows
            // as error replies afterwards.
            if (config.username.empty()) {
                redisAsyncCommand(c, nullptr, nullptr, "AUTH %s", config.password.reveal().c_str());
            } else {
                redisAsyncCommand(c, nullptr, nullptr, "AUTH %s %s", config.username.c_str(),
                                  config.password.reveal().c_str());
            }
        }
        contexts_.push_back(c);
    }
    thread_ = std::thread{[this] { uv_run(&loop_, UV_RUN_DEFAULT); }};
    const auto give_up = steady::now() + std::chrono::seconds{5};
    while (connected_.load() < static_cast<int>(contexts_.size())) {
        if (failed_.load() > 0 || steady::now() >= give_up) {
            std::fprintf(stderr, "redlock_load: raw-hiredis: could not connect to every node\n");
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    return true;
}

raw_uv_driver::~raw_uv_driver() {
    if (thread_.joinable()) {
        uv_async_send(&stop_);
        thread_.join();
    }
    uv_loop_close(&loop_);
}

void raw_uv_driver::stop_on_loop() {
    for (redisAsyncContext* c : contexts_) redisAsyncDisconnect(c);
    contexts_.clear();
    uv_close(reinterpret_cast<uv_handle_t*>(&kick_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&stop_), nullptr);
}

void raw_uv_driver::on_connect(const redisAsyncContext* c, int status) {
    auto& self = *static_cast<raw_uv_driver*>(c->data);
    (status == REDIS_OK ? self.connected_ : self.failed_).fetch_add(1);
}

void raw_uv_driver::on_disconnect(const redisAsyncContext* /*c*/, int /*status*/) {}

void raw_uv_driver::start(phase_gate& gate, phase_stats& stats) {
    gate_ = &gate;
    stats_ = &stats;
    uv_async_send(&kick_);
}

void raw_uv_driver::begin(std::uint32_t index, steady::time_point now) {
    if (!gate_->admit(now)) {
        --active_;
        gate_->slot_done();
        return;
    }
    restart_cycle(run_.cycles[index], now, run_.values);
    send_round(index);
}

void raw_uv_driver::send_round(std::uint32_t index) {
    raw_cycle& c = run_.cycles[index];
    const round_kind kind = run_.plan.rounds[c.round];
    prepare_round(c, kind);
    // hiredis's asynchronous API formats the command once per node.
    round_argv a = round_arguments(kind, c, run_.ttl_text, run_.wake_prefix);
    tag* t = &tags_[index * run_.plan.rounds.size() + c.round];
    for (redisAsyncContext* ctx : contexts_) {
        redisAsyncCommandArgv(ctx, &raw_uv_driver::on_command, t, a.argc, a.argv, a.lens);
        ++requests_;
    }
}

void raw_uv_driver::on_command(redisAsyncContext* /*c*/, void* reply, void* privdata) {
    const auto& t = *static_cast<const tag*>(privdata);
    t.self->on_reply(static_cast<const redisReply*>(reply), t);
}

void raw_uv_driver::on_reply(const redisReply* reply, const tag& t) {
    if (reply == nullptr) return;  // disconnecting
    raw_cycle& c = run_.cycles[t.cycle];
    if (t.round != c.round) return;  // a straggler of a round already decided
    if (const char* anomaly = absorb_reply(run_.plan.rounds[t.round], reply, c))
        stats_->note(anomaly);
    ++c.answered;
    const bool last = c.round + 1 == run_.plan.rounds.size();
    if (!last && c.answered == run_.quorum) {
        if (c.round == run_.plan.acquired_after) {
            stats_->acquire.record(nanos_between(c.t0, steady::now()));
        }
        ++c.round;
        c.answered = 0;
        send_round(t.cycle);
    } else if (last && c.answered == contexts_.size()) {
        const auto now = steady::now();
        stats_->cycle.record(nanos_between(c.t0, now));
        stats_->completed.fetch_add(1, std::memory_order_relaxed);
        begin(t.cycle, now);
    }
}

}  // namespace redlock::bench
