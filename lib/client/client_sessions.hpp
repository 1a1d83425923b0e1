#pragma once

// What client::open_session and client::close_session do (client.cpp forwards
// to these): a session is made here, and closed by releasing each of its
// locks. Its renewals are the watchdog's session_keeper.

#include "client/client_core.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {

/// A new session with `options` under `config`, or invalid_argument.
[[nodiscard]] auto open_session(const client_config& config, session_options options)
    -> result<session>;

/// Closes `open` (nothing joins it any more) and releases each of its locks;
/// `done` gets the count, on the loop thread, never inside this call.
void close_session(client_core& core, const session& open, client::close_callback done);

}  // namespace redlock::detail
