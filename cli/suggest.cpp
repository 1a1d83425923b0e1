#include "suggest.hpp"

#include <algorithm>
#include <vector>

namespace redlock::cli {

auto typo_distance(std::string_view a, std::string_view b) -> std::size_t {
    // Three rows of the optimal-string-alignment table: the one before the
    // previous is needed for a transposition.
    std::vector<std::size_t> before(b.size() + 1);
    std::vector<std::size_t> previous(b.size() + 1);
    std::vector<std::size_t> current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                current[j] = std::min(current[j], before[j - 2] + 1);
        }
        std::swap(before, previous);
        std::swap(previous, current);
    }
    return previous[b.size()];
}

auto closest_word(std::string_view word, std::span<const std::string> candidates) -> std::string {
    if (word.empty()) return {};
    if (word.size() >= 3) {
        for (const std::string& candidate : candidates) {
            if (candidate.size() > word.size() && std::string_view{candidate}.starts_with(word))
                return candidate;
        }
    }
    const std::size_t limit = word.size() <= 3 ? 1 : 2;
    std::string best;
    std::size_t best_distance = limit + 1;
    for (const std::string& candidate : candidates) {
        const std::size_t d = typo_distance(word, candidate);
        if (d < best_distance) {
            best_distance = d;
            best = candidate;
        }
    }
    return best;
}

}  // namespace redlock::cli
