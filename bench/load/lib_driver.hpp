#pragma once

#include "load/phase.hpp"
#include "redlock/client.hpp"

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace redlock::bench {

/// An error code by name: the errc's for the library's own ("contended").
[[nodiscard]] auto errc_name(const std::error_code& code) -> std::string;

/// What `c` counted of releases answered after they were decided, since it
/// started (warm-ups included): {"deleted": n, "failed": n}.
[[nodiscard]] auto late_releases_json(const client& c) -> nlohmann::ordered_json;

/// A client on `config` once every node is connected (bounded: 5 s), or
/// nullopt (said on stderr).
[[nodiscard]] auto connected_client(const client_config& config) -> std::optional<client>;

/// Load through the library's public API, on one client and its own loop
/// thread.
///
/// Uncontended: `concurrency` chains, each on its own resource (or its own
/// share of `load.resources`, in turn), each running
/// acquire_async -> [extend_async ->] release_async -> next, all inside the
/// callbacks (so on the loop thread, where calls run inline); with
/// `load.shared` they are readers, and with `load.one_resource` all on one
/// resource. Contended:
/// `workers` threads on one resource, each running the blocking acquire ->
/// hold -> release.
class lib_driver final : public driver {
public:
    /// Creates the client and waits (bounded) until every node is connected.
    [[nodiscard]] static auto create(const client_config& config, const workload& load)
        -> std::unique_ptr<lib_driver>;

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

    void add_json(nlohmann::ordered_json& out) const override;

    [[nodiscard]] auto client_handle() -> client& { return client_; }

private:
    struct slot {
        lib_driver* self = nullptr;
        std::vector<std::string> resources;  // taken in turn, one per cycle
        std::size_t turn = 0;
        steady::time_point t0{};
        lock held;
    };

    lib_driver(client c, const workload& load);
    void begin(slot& s);
    void on_acquired(slot& s, result<lock> r);
    void release(slot& s);
    void end_cycle(slot& s, bool ok);
    void note_release(const release_report& report);
    void note_acquire_failure(const error& e);
    void worker(int index);

    client client_;
    workload load_;
    lock_options options_;
    std::vector<slot> slots_;
    std::vector<std::thread> workers_;
    phase_gate* gate_ = nullptr;
    phase_stats* stats_ = nullptr;
};

}  // namespace redlock::bench
