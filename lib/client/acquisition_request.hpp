#pragma once

#include "redlock/client.hpp"

#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

/// One client::acquire call on its way to an acquire_op: carried to the loop,
/// kept while back-pressure or its owner's acquisition in flight holds it back.
struct acquisition_request {
    client::acquire_ticket ticket = 0;
    std::vector<std::string> resources;
    lock_options options;
    client::acquire_callback done;
    std::shared_ptr<const std::string> proclamation;  ///< a campaign's (lock_state)
};

}  // namespace redlock::detail
