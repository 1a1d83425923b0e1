#pragma once

// The second pass of parse_config: from a syntactically valid JSON document to
// a client_config, field by field (see config_json_fields.cpp).

#include "redlock/config.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string_view>

namespace redlock::detail {

/// Reads every field of `root` into a client_config, then runs validate_config
/// on it. The first problem found is the error; `source` names the document.
[[nodiscard]] auto read_config_document(const nlohmann::json& root, std::string_view source)
    -> result<client_config, config_error>;

}  // namespace redlock::detail
