#include "client/leader_read.hpp"

#include "client/client_calls.hpp"
#include "client/election_commands.hpp"

#include <utility>
#include <vector>

namespace redlock::detail {

void read_leader(client_core& core, std::string name,
                 std::function<void(result<election_view>)> done) {
    std::string problem = election_problem(name);
    probe_resource<election_view>(
        core, std::move(name), std::move(problem),
        [&core](const std::string& r) { return leader_commands(core.config(), r); },
        [](std::string r, std::size_t quorum, const std::vector<node_probe>& probes) {
            return parse_leader(std::move(r), quorum, probes);
        },
        [n = core.node_count(), done = std::move(done)](result<election_view> view) {
            if (view && view->answered < view->quorum) {
                return done(failure{error{make_error_code(errc::quorum_unreachable),
                                          "election '" + view->name +
                                              "': " + std::to_string(view->answered) + " of " +
                                              std::to_string(n) + " nodes answered, " +
                                              std::to_string(view->quorum) + " needed",
                                          {},
                                          0}});
            }
            done(std::move(view));
        });
}

}  // namespace redlock::detail
