#pragma once

#include "load/phase.hpp"
#include "load/raw_cycle.hpp"
#include "redlock/config.hpp"

#include <hiredis/async.h>
#include <uv.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace redlock::bench {

/// A reference point rather than the ceiling: the same commands as a lock
/// cycle through hiredis's own asynchronous API with its libuv adapter, on
/// one loop thread — what a hand-written hiredis client on libuv costs.
/// (hiredis 0.14's adapter re-arms its uv_poll on every write, which the
/// epoll ceiling of raw_driver does not pay.)
class raw_uv_driver final : public driver {
public:
    /// Connects to every node and starts the loop thread; nullptr on failure.
    [[nodiscard]] static auto create(const client_config& config, const workload& load)
        -> std::unique_ptr<raw_uv_driver>;
    ~raw_uv_driver() override;

    [[nodiscard]] auto name() const -> std::string override { return "raw-hiredis"; }
    void start(phase_gate& gate, phase_stats& stats) override;
    /// Not counted: hiredis writes from inside its own event handlers.
    [[nodiscard]] auto writes() const -> std::uint64_t override { return 0; }
    [[nodiscard]] auto requests() const -> std::uint64_t override { return requests_; }

private:
    struct tag {
        raw_uv_driver* self;
        std::uint32_t cycle;
        std::uint32_t round;
    };

    raw_uv_driver(const client_config& config, const workload& load);
    [[nodiscard]] auto connect_all(const client_config& config) -> bool;
    void begin(std::uint32_t index, steady::time_point now);
    void send_round(std::uint32_t index);
    void on_reply(const redisReply* reply, const tag& t);
    void stop_on_loop();

    static void on_connect(const redisAsyncContext* c, int status);
    static void on_disconnect(const redisAsyncContext* c, int status);
    static void on_command(redisAsyncContext* c, void* reply, void* privdata);

    workload load_;
    raw_setup run_;          // plan, keys and values of the cycles
    std::vector<tag> tags_;  // one per (cycle, round): the privdata of its commands
    std::vector<redisAsyncContext*> contexts_;
    std::atomic<int> connected_{0};
    std::atomic<int> failed_{0};
    int active_ = 0;
    std::uint64_t requests_ = 0;

    uv_loop_t loop_{};
    uv_async_t kick_{};
    uv_async_t stop_{};
    std::thread thread_;
    phase_gate* gate_ = nullptr;
    phase_stats* stats_ = nullptr;
};

}  // namespace redlock::bench
