#pragma once

// What a torture candidate (candidate.cpp) writes about each leadership it won and each write
// it made as the leader, and what the orchestrator reads back (election_checker.hpp). One line
// per record, as record.hpp's: "won k=v ..." as soon as campaign() returns, "write k=v ..." at
// each write, "ending k=v ..." once it steps down (before it resigns or abandons), "lead k=v
// ..." when the leadership has ended, and a final "summary k=v ...". The orchestrator appends
// "killed k=v ..." to the file of a candidate it SIGKILLed. Times are nanoseconds on
// CLOCK_MONOTONIC, shared by every process of the machine.

#include "record.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock_torture {

/// How a leadership ended, as its candidate chose or found it.
enum class lead_end {
    resigned,   ///< resign() after a random term of office
    abandoned,  ///< the candidate destroyed its client: no more renewals, no resignation
    lost,       ///< lost() (renewals failed) or valid() false before the candidate chose
    stopped,    ///< the candidate was told to stop, and resigned
    killed,     ///< SIGKILLed by the orchestrator while it led (no lead record: made up)
};

[[nodiscard]] auto lead_end_name(lead_end how) noexcept -> const char*;
[[nodiscard]] auto lead_end_from_name(std::string_view name) noexcept -> std::optional<lead_end>;

/// One leadership: campaign() returned it, the candidate led, then it ended.
struct lead_record {
    int worker = 0;  ///< the candidate
    std::string election;
    std::uint64_t term = 0;
    std::int64_t called_ns = 0;       ///< campaign() was called
    std::int64_t start_ns = 0;        ///< campaign() had returned (taken before valid())
    std::int64_t end_ns = 0;          ///< the candidate stopped acting as the leader
    std::int64_t until_start_ns = 0;  ///< held().valid_until() right after campaign()
    std::int64_t until_end_ns = 0;    ///< the same at the end (renewals move it)
    bool valid_at_start = false;
    bool valid_at_end = false;
    bool lost = false;            ///< lost() at the end
    std::int64_t lost_at_ns = 0;  ///< when on_lost ran; 0 if it did not
    int ttl_ms = 0;
    lead_end how = lead_end::resigned;
    int resign_ok = 0;  ///< 1 when resign() returned a report (0 when not resigned)
    int writes = 0;     ///< writes made as the leader (not counting a late one)
    /// Killed only: it had written its "ending" line (it was stepping down, may have resigned).
    bool stepping_down = false;

    /// As hold_record's: the end, or the validity's end if that came first.
    [[nodiscard]] auto believed_end_ns() const noexcept -> std::int64_t {
        return end_ns < until_end_ns ? end_ns : until_end_ns;
    }
    [[nodiscard]] auto format() const -> std::string;
    [[nodiscard]] auto describe(std::int64_t origin_ns) const -> std::string;
};

/// One write to the fenced store, with the term it carries. `late`: a write made on purpose
/// after the candidate abandoned its leadership (a leader that paused, or lost it without
/// knowing, and writes anyway): the store must refuse it once a newer leader has written.
struct write_record {
    int worker = 0;
    std::uint64_t term = 0;
    std::int64_t at_ns = 0;  ///< taken before the candidate checked valid()
    bool late = false;
    std::int64_t until_ns = 0;  ///< held().valid_until() once valid() said yes (0: late)

    [[nodiscard]] auto format() const -> std::string;
    [[nodiscard]] auto describe(std::int64_t origin_ns) const -> std::string;
};

/// campaign() has returned a leadership: written at once, so that a leader killed later is
/// known by its term and validity.
struct won_record {
    int worker = 0;
    std::uint64_t term = 0;
    std::int64_t called_ns = 0;
    std::int64_t start_ns = 0;
    std::int64_t until_ns = 0;  ///< held().valid_until() right after campaign()
    bool valid = false;
    int ttl_ms = 0;

    [[nodiscard]] auto format() const -> std::string;
};

/// "ending": the leader stops acting as one (before it resigns or abandons); "killed": the
/// orchestrator SIGKILLed it once it had stopped it (`term` 0); "campaign": a campaign
/// called at `at_ns`, whose attempts may store its proposal on nodes without its hearing so
/// (`term` 0: unknown).
struct mark_record {
    int worker = 0;
    std::uint64_t term = 0;
    std::int64_t at_ns = 0;

    [[nodiscard]] auto format(std::string_view tag) const -> std::string;
};

[[nodiscard]] auto parse_lead(std::string_view line) -> std::optional<lead_record>;
[[nodiscard]] auto parse_write(std::string_view line) -> std::optional<write_record>;
[[nodiscard]] auto parse_won(std::string_view line) -> std::optional<won_record>;
[[nodiscard]] auto parse_mark(std::string_view line, std::string_view tag)
    -> std::optional<mark_record>;

struct candidate_file {
    std::vector<lead_record> leads;
    std::vector<write_record> writes;
    std::vector<won_record> wons;
    std::vector<mark_record> endings;
    std::vector<mark_record> campaign_calls;
    std::optional<mark_record> killed;
    std::optional<worker_summary> summary;
    std::size_t unreadable_lines = 0;
};

/// The leadership a killed candidate held when it was killed, made up from its records: its
/// last "won" without a "lead" of the same term. It ended at its "ending" mark (then
/// `stepping_down`) or at the kill; its validity at the end is the latest valid_until it saw
/// (at the win or at a write): its lock lives on the nodes at least that long. None when the
/// candidate was not killed or did not lead then.
[[nodiscard]] auto killed_lead(const candidate_file& file, const std::string& election)
    -> std::optional<lead_record>;

[[nodiscard]] auto read_candidate_file(const std::filesystem::path& file) -> candidate_file;

}  // namespace redlock_torture
