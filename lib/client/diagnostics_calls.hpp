#pragma once

// What client::status_async (both forms) and client::check_async do, apart
// from client.cpp: the probes and their parsing (diagnostics.cpp).

#include "client/client_core.hpp"
#include "redlock/diagnostics.hpp"

#include <functional>
#include <string>

namespace redlock::detail {

void start_status(client_core& core, std::string resource,
                  std::function<void(result<lock_status>)> done);
void start_semaphore_status(client_core& core, std::string resource, int permits,
                            std::function<void(result<semaphore_status>)> done);
void start_check(client_core& core, std::function<void(result<cluster_health>)> done);

}  // namespace redlock::detail
