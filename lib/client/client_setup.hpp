#pragma once

// What a configuration must pass before a client is built on it.

#include "redlock/config.hpp"
#include "redlock/result.hpp"
#include "transport/tls_session.hpp"

#include <memory>

namespace redlock::detail {

/// Validates `config` (validate_config, and at most 255 nodes: a node index
/// fits in a request tag) and loads its TLS files. The TLS context every
/// connection shares: null without TLS.
[[nodiscard]] auto checked_setup(client_config& config)
    -> result<std::shared_ptr<const tls_context>>;

}  // namespace redlock::detail
