// election_load's leader kills and its final stretch (election_load.hpp): who leads is read
// from the candidates' records as they grow (a "won" line not yet followed by an "ending" or a
// "lead" line of its term).

#include "election_load.hpp"
#include "record.hpp"

#include <csignal>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <thread>

namespace redlock_torture {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

namespace {

/// True once `pid` is stopped (state T in /proc/<pid>/stat), or gone.
auto is_stopped(pid_t pid) -> bool {
    std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
    std::string text;
    if (!std::getline(in, text)) return true;
    const auto paren = text.rfind(')');
    return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] == 'T' ||
           text[paren + 2] == 't' || text[paren + 2] == 'Z';
}

}  // namespace

void election_load::record_tail::update() {
    std::ifstream in{file, std::ios::binary};
    if (!in) return;
    in.seekg(static_cast<std::streamoff>(offset));
    std::string line;
    while (std::getline(in, line)) {
        if (in.eof()) break;  // no newline yet: a line still being written, read it next time
        offset += line.size() + 1;
        if (auto won = parse_won(line)) {
            leading = *won;
        } else if (auto ending = parse_mark(line, "ending")) {
            if (leading && ending->term == leading->term) leading.reset();
        } else if (auto lead = parse_lead(line)) {
            if (leading && lead->term == leading->term) leading.reset();
        }
    }
}

void election_load::try_kill(clock::time_point now) {
    next_kill_ = now + 100ms;  // unless a leader is found below
    std::optional<std::size_t> target;
    for (std::size_t c = 0; c < tails_.size(); ++c) {
        tails_[c].update();
        if (tails_[c].leading && !state_[c].resume_at && !pool_[c].exited()) target = c;
    }
    if (!target) return;
    const std::size_t c = *target;
    // Stopped first: then its records are final, and say whether it still leads.
    ::kill(pool_[c].pid(), SIGSTOP);
    const auto give_up = clock::now() + 2s;
    while (!is_stopped(pool_[c].pid()) && clock::now() < give_up) std::this_thread::sleep_for(1ms);
    tails_[c].update();
    if (!tails_[c].leading || !is_stopped(pool_[c].pid())) {
        ::kill(pool_[c].pid(), SIGCONT);
        ++counts_["kill_missed"];
        note("kill-missed", c);
        return;
    }
    const std::int64_t at = monotonic_ns();
    const std::uint64_t term = tails_[c].leading->term;
    pool_[c].kill();
    {
        std::ofstream out{file(ids_[c]), std::ios::app};
        out << "\n" << mark_record{ids_[c], 0, at}.format("killed") << "\n";
    }
    killed_.push_back(ids_[c]);
    ++counts_["kill"];
    note("kill", c, "term=" + std::to_string(term));
    launch(c, next_id_++);
    note("replaced", c);
    next_kill_ = clock::now() + milliseconds{uniform(5000, 10000)};
}

auto election_load::final_stretch(milliseconds hold, milliseconds limit)
    -> std::optional<redlock_torture::final_stretch> {
    const std::int64_t healed = monotonic_ns();
    for (auto& p : pool_) (void)p.send("f");
    if (!pool_.empty()) note("final-mode", 0);
    const auto give_up = clock::now() + limit;
    while (clock::now() < give_up) {
        for (std::size_t c = 0; c < tails_.size(); ++c) {
            tails_[c].update();
            if (!tails_[c].leading) continue;
            const std::int64_t from = std::max(tails_[c].leading->start_ns, healed);
            const std::int64_t now = monotonic_ns();
            if (now - from >= std::chrono::nanoseconds{hold}.count()) {
                note("final-stretch", c,
                     "term=" + std::to_string(tails_[c].leading->term) +
                         " from=" + std::to_string(from) + " until=" + std::to_string(now));
                return redlock_torture::final_stretch{from, now};
            }
        }
        std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
}

}  // namespace redlock_torture
