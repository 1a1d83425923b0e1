#pragma once

// The status probes' plumbing (client.cpp): a refusal delivered through the loop, or the
// commands sent to every node and their answers parsed.

#include "client/client_core.hpp"
#include "operations/probe_op.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace redlock::detail {

/// The status probes: `invalid`, if not empty, is delivered to `done` as invalid_argument
/// through the loop; otherwise `commands` go to every node (a cluster's: to `slot`'s master)
/// and `parse` makes the result of the answers.
template <class T, class Parse>
void probe_then(client_core& core, std::string invalid,
                std::vector<std::vector<std::string>> commands, std::function<void(result<T>)> done,
                Parse parse, std::uint16_t slot) {
    if (!invalid.empty()) {
        core.probe({}, [invalid = std::move(invalid),
                        done = std::move(done)](result<std::vector<node_probe>>) {
            done(failure{error{make_error_code(errc::invalid_argument), invalid, {}, 0}});
        });
        return;
    }
    auto answered = [parse = std::move(parse),
                     done = std::move(done)](result<std::vector<node_probe>> probes) mutable {
        done(probes ? result<T>{parse(std::move(*probes))}
                    : result<T>{failure{std::move(probes).error()}});
    };
    core.probe(std::move(commands), std::move(answered), slot);
}

}  // namespace redlock::detail
