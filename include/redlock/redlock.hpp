#pragma once

// Umbrella header: everything a user of the library needs.
#include "redlock/client.hpp"
#include "redlock/config.hpp"
#include "redlock/coro.hpp"
#include "redlock/diagnostics.hpp"
#include "redlock/error.hpp"
#include "redlock/lock.hpp"
#include "redlock/metrics.hpp"
#include "redlock/operator_tools.hpp"
#include "redlock/result.hpp"
