#include "sansio/command.hpp"

#include <charconv>
#include <cstring>
#include <utility>

namespace redlock::detail {
namespace {

[[nodiscard]] constexpr auto decimal_digits(std::size_t n) noexcept -> std::size_t {
    std::size_t digits = 1;
    while (n >= 10) {
        n /= 10;
        ++digits;
    }
    return digits;
}

/// `lead` (`*` or `$`), `n` in decimal, CRLF.
auto put_header(char* out, char lead, std::size_t n) noexcept -> char* {
    *out++ = lead;
    out = std::to_chars(out, out + decimal_digits(n), n).ptr;
    *out++ = '\r';
    *out++ = '\n';
    return out;
}

}  // namespace

auto encoded_command::encoded_size(std::span<const std::string_view> argv) noexcept -> std::size_t {
    constexpr std::size_t framing = 3;  // the lead byte and CRLF of a header
    std::size_t size = framing + decimal_digits(argv.size());
    for (const std::string_view a : argv) size += framing + decimal_digits(a.size()) + a.size() + 2;
    return size;
}

auto encoded_command::encode_to(char* out, std::span<const std::string_view> argv) noexcept
    -> char* {
    out = put_header(out, '*', argv.size());
    for (const std::string_view a : argv) {
        out = put_header(out, '$', a.size());
        if (!a.empty()) std::memcpy(out, a.data(), a.size());
        out += a.size();
        *out++ = '\r';
        *out++ = '\n';
    }
    return out;
}

encoded_command::encoded_command(std::span<const std::string_view> argv)
    : size_{encoded_size(argv)} {
    char* out = in_place_.data();
    if (size_ > in_place_.size()) {
        heap_ = std::make_unique_for_overwrite<char[]>(size_);
        out = heap_.get();
    }
    encode_to(out, argv);
}

encoded_command::encoded_command(encoded_command&& other) noexcept {
    take(other);
}

auto encoded_command::operator=(encoded_command&& other) noexcept -> encoded_command& {
    if (this != &other) take(other);
    return *this;
}

void encoded_command::take(encoded_command& other) noexcept {
    heap_ = std::move(other.heap_);
    size_ = std::exchange(other.size_, 0);
    if (!heap_) std::memcpy(in_place_.data(), other.in_place_.data(), size_);
}

void append_command(std::string& out, std::span<const std::string_view> argv) {
    const std::size_t start = out.size();
    out.resize(start + encoded_command::encoded_size(argv));
    encoded_command::encode_to(out.data() + start, argv);
}

}  // namespace redlock::detail
