#pragma once

#include "load/phase.hpp"
#include "redlock/client.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace redlock::bench {

/// Contended lock kinds on one resource, through the library's blocking API:
/// the readers and writers of a read-write lock (`load.writers` exclusive
/// workers, then `load.readers` shared ones), or the workers of a counting
/// semaphore of `load.permits` permits. Each worker runs acquire -> hold ->
/// release until the gate closes, waiting with `load.max_wait` if set.
///
/// Beside the common figures it counts, per role and over the measured phases
/// only: grants, give-ups and the wait from asking to holding; the time
/// permits were held (for the semaphore's utilisation); and what the workers
/// saw of each other's holds: a writer beside anyone, or more holders of a
/// permit than one, or more than K permits held, is an exclusion violation.
class kinds_driver final : public driver {
public:
    /// Creates the client and waits (bounded) until every node is connected.
    [[nodiscard]] static auto create(const client_config& config, const workload& load)
        -> std::unique_ptr<kinds_driver>;

    [[nodiscard]] auto name() const -> std::string override { return "lib"; }
    void start(phase_gate& gate, phase_stats& stats) override;
    void finish() override;
    [[nodiscard]] auto writes() const -> std::uint64_t override { return client_.stats().writes; }
    [[nodiscard]] auto requests() const -> std::uint64_t override {
        return client_.stats().requests;
    }
    [[nodiscard]] auto handoffs() const -> std::uint64_t override {
        return client_.stats().handoffs;
    }
    void measuring(bool on) override { measuring_ = on; }
    void add_json(nlohmann::ordered_json& out) const override;

private:
    enum class role : std::uint8_t { writer, reader, permit };
    static constexpr int role_count = 3;

    /// One role's figures over the measured phases.
    struct role_stats {
        int workers = 0;
        histogram wait;  ///< from asking to holding (granted acquisitions only)
        std::atomic<std::uint64_t> grants{0};
        std::atomic<std::uint64_t> gave_up{0};
    };

    kinds_driver(client c, const workload& load);
    [[nodiscard]] auto role_of(int worker) const -> role;
    void worker(int index);
    /// The holds seen from the workers: called once granted, and before releasing.
    void enter(role r, std::optional<int> permit);
    void leave(role r, std::optional<int> permit);

    client client_;
    workload load_;
    std::string resource_;
    std::vector<std::thread> workers_;
    phase_gate* gate_ = nullptr;
    phase_stats* stats_ = nullptr;

    bool measuring_ = false;
    steady::time_point phase_start_{};
    double measured_s_ = 0;  ///< the measured phases' length, start to last worker done
    role_stats roles_[role_count];
    std::atomic<std::uint64_t> held_ns_{0};     ///< granted -> release answered, summed
    std::atomic<std::uint64_t> working_ns_{0};  ///< granted -> release called, summed
    /// Read-write runs: the spans during which some reader held (first grant
    /// to the last release sent), their count, and the time writers held.
    std::atomic<std::int64_t> batch_start_ns_{0};
    std::atomic<std::uint64_t> batch_ns_{0};
    std::atomic<std::uint64_t> batches_{0};
    std::atomic<std::uint64_t> writer_working_ns_{0};
    std::atomic<int> writers_in_{0};
    std::atomic<int> readers_in_{0};
    std::atomic<int> permits_in_{0};
    std::atomic<int> most_readers_{0};
    std::atomic<int> most_permits_{0};
    std::unique_ptr<std::atomic<int>[]> permit_holders_;
    std::atomic<std::uint64_t> violations_{0};
};

}  // namespace redlock::bench
