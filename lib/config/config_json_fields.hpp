#pragma once

// The second pass of parse_config: from a syntactically valid JSON document to
// a client_config, field by field (see config_json_fields.cpp).

#include "redlock/config.hpp"

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <string_view>

namespace redlock::detail {

/// Reads every field of `root` into a client_config, then runs validate_config
/// on it. The first problem found is the error; `source` names the document.
/// Relative TLS file paths in it are taken
/// relative to `base_dir` when it is not empty: the directory of the file
/// the document came from.
[[nodiscard]] auto read_config_document(const nlohmann::json& root, std::string_view source,
                                        const std::filesystem::path& base_dir = {})
    -> result<client_config, config_error>;

}  // namespace redlock::detail
