#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

/// One command in RESP (an array of bulk strings), encoded once and then sent as
/// is to any number of nodes: a fan-out to N nodes costs one encoding, not N.
///
/// The encoding is written here rather than by the C client's formatter: RESP's
/// request side is a length prefix per argument, and that formatter's sdscatfmt spent
/// about 4 500 instructions per command on it, a quarter of a lock cycle's
/// client cost (docs/benchmarks.md). Replies are parsed in transport/, and the
/// unit tests check these bytes against the C client's formatter.
class encoded_command {
public:
    explicit encoded_command(std::span<const std::string_view> argv);
    encoded_command(std::initializer_list<std::string_view> argv)
        : encoded_command{std::span<const std::string_view>{argv.begin(), argv.size()}} {}
    encoded_command(encoded_command&& other) noexcept;
    auto operator=(encoded_command&& other) noexcept -> encoded_command&;
    encoded_command(const encoded_command&) = delete;
    auto operator=(const encoded_command&) -> encoded_command& = delete;
    ~encoded_command() = default;

    [[nodiscard]] auto bytes() const noexcept -> std::string_view { return {data(), size_}; }

    /// The exact length of `argv`'s encoding.
    [[nodiscard]] static auto encoded_size(std::span<const std::string_view> argv) noexcept
        -> std::size_t;
    /// Writes `argv`'s encoding at `out`, which has room for encoded_size(argv)
    /// bytes; returns the end of what it wrote.
    static auto encode_to(char* out, std::span<const std::string_view> argv) noexcept -> char*;

private:
    // A SET or a release call of a usual key fits in place: encoding one for a
    // fan-out allocates nothing.
    static constexpr std::size_t in_place_capacity = 256;

    [[nodiscard]] auto data() const noexcept -> const char* {
        return heap_ ? heap_.get() : in_place_.data();
    }
    void take(encoded_command& other) noexcept;

    std::unique_ptr<char[]> heap_;  // only when the encoding outgrows in_place_
    std::size_t size_ = 0;
    std::array<char, in_place_capacity> in_place_;  // NOLINT: written before it is read
};

/// Appends one RESP-encoded command to `out`.
void append_command(std::string& out, std::span<const std::string_view> argv);
inline void append_command(std::string& out, std::initializer_list<std::string_view> argv) {
    append_command(out, std::span<const std::string_view>{argv.begin(), argv.size()});
}

}  // namespace redlock::detail
