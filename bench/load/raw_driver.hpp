#pragma once

#include "load/phase.hpp"
#include "load/raw_cycle.hpp"
#include "redlock/config.hpp"

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace redlock::bench {

/// The ceiling: the same commands as a lock cycle, with hiredis's formatter
/// and reader and no lock logic, on non-blocking sockets and one epoll loop.
/// Each round is encoded once and appended to every node's output buffer;
/// whatever was queued in one loop turn leaves in one write() per node, and
/// each readable node gets read() until the kernel has no more. That is as
/// little as a client can do per lock on these nodes: one cycle in flight
/// gives the latency floor, many in flight the throughput ceiling
/// (pipelining).
class raw_driver final : public driver {
public:
    /// Connects (blocking, 1 s timeout) to every node; nullptr on failure.
    [[nodiscard]] static auto create(const client_config& config, const workload& load)
        -> std::unique_ptr<raw_driver>;
    ~raw_driver() override;

    [[nodiscard]] auto name() const -> std::string override { return "raw"; }
    void start(phase_gate& gate, phase_stats& stats) override;
    void finish() override;
    [[nodiscard]] auto writes() const -> std::uint64_t override { return writes_; }
    [[nodiscard]] auto requests() const -> std::uint64_t override { return requests_; }

private:
    struct pending {
        std::uint32_t cycle;
        std::uint32_t round;
    };
    /// Requests in the order the node will answer them.
    class fifo {
    public:
        void push(pending p);
        [[nodiscard]] auto pop() noexcept -> pending;
        [[nodiscard]] auto empty() const noexcept -> bool { return head_ == tail_; }

    private:
        std::vector<pending> ring_ = std::vector<pending>(64);
        std::size_t head_ = 0;  // next to pop
        std::size_t tail_ = 0;  // next free
    };
    struct node {
        int fd = -1;
        redisReader* reader = nullptr;
        std::string out;
        std::size_t sent = 0;
        bool dirty = false;
        bool polling_out = false;
        fifo requests;
    };

    raw_driver(const client_config& config, const workload& load);
    [[nodiscard]] auto connect_all(const client_config& config) -> bool;
    void run();
    void begin(std::uint32_t index, steady::time_point now);
    void send_round(std::uint32_t index);
    void on_reply(const redisReply* reply, pending p);
    [[nodiscard]] auto read_node(node& n) -> bool;
    [[nodiscard]] auto flush(node& n) -> bool;
    void poll_out(node& n, bool on);

    workload load_;
    std::vector<node> nodes_;
    raw_setup run_;  // plan, keys and values of the cycles
    int epoll_fd_ = -1;
    int active_ = 0;
    bool broken_ = false;
    std::uint64_t writes_ = 0;
    std::uint64_t requests_ = 0;
    std::thread thread_;
    phase_gate* gate_ = nullptr;
    phase_stats* stats_ = nullptr;
    std::vector<char> read_buf_ = std::vector<char>(64 * 1024);
};

}  // namespace redlock::bench
