#pragma once

#include <redlock/config.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock_test {

/// Collects what a client logs, for assertions on its warnings. Pass logger() as
/// client_config::logger: lines arrive on the client's loop thread (and on the thread of
/// client::create), and are read from the test thread. The logger shares the record, so
/// it stays safe to call after the log_capture itself is gone.
class log_capture {
public:
    struct line {
        redlock::log_level level;
        std::string text;
        std::chrono::steady_clock::time_point at;
    };

    log_capture() : record_{std::make_shared<record>()} {}

    [[nodiscard]] auto logger() const -> std::function<void(redlock::log_level, std::string_view)> {
        return [record = record_](redlock::log_level level, std::string_view text) {
            std::lock_guard held{record->mutex};
            record->lines.push_back(
                line{level, std::string{text}, std::chrono::steady_clock::now()});
        };
    }

    /// Every line so far, in order.
    [[nodiscard]] auto lines() const -> std::vector<line> {
        std::lock_guard held{record_->mutex};
        return record_->lines;
    }

    /// How many lines so far contain `text`.
    [[nodiscard]] auto count(std::string_view text) const -> std::size_t {
        std::size_t n = 0;
        for (const auto& l : lines()) {
            if (l.text.find(text) != std::string::npos) ++n;
        }
        return n;
    }

    [[nodiscard]] auto contains(std::string_view text) const -> bool { return count(text) > 0; }

    /// The first line containing `text`, if one was logged.
    [[nodiscard]] auto first(std::string_view text) const -> std::optional<line> {
        for (auto& l : lines()) {
            if (l.text.find(text) != std::string::npos) return l;
        }
        return std::nullopt;
    }

    /// Every line, one per row: for failure messages.
    [[nodiscard]] auto dump() const -> std::string {
        std::string text;
        for (const auto& l : lines()) text += "\n  " + l.text;
        return text.empty() ? "\n  (nothing logged)" : text;
    }

private:
    struct record {
        std::mutex mutex;
        std::vector<line> lines;
    };
    std::shared_ptr<record> record_;
};

}  // namespace redlock_test
