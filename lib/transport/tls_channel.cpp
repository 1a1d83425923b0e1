#include "transport/tls_channel.hpp"

#include <utility>

namespace redlock::detail {

auto tls_channel::start(const tls_context& context, const std::string& host) -> std::string {
    session_ = std::make_unique<tls_session>(context, host);
    wire_.clear();
    if (!session_->handshake()) return "TLS handshake failed: " + session_->error();
    return {};  // the ClientHello leaves with the next encrypt_pending()
}

void tls_channel::stop() noexcept {
    // plain_ stays: decrypt()'s caller may still be reading it.
    session_.reset();
    wire_.clear();
}

auto tls_channel::negotiated() const -> std::optional<tls_info> {
    if (!established()) return std::nullopt;
    return session_->negotiated();
}

auto tls_channel::encrypt_pending(std::string& plain) -> std::string {
    if (session_->established() && !plain.empty()) {
        if (session_->write(plain)) plain.clear();
    }
    if (!session_->error().empty()) return "TLS: " + session_->error();
    session_->take_output(wire_);
    return {};
}

auto tls_channel::decrypt(const char* data, std::size_t len) -> decrypted {
    decrypted out;
    if (!session_->feed(data, len)) {
        out.failure = "TLS: " + session_->error();
        return out;
    }
    if (!session_->established()) {
        if (!session_->handshake()) {
            out.failure = "TLS handshake failed: " + session_->error();
            return out;
        }
        // Handshake records to send, and once it is done, the Redis handshake.
        out.flush = true;
        if (!session_->established()) return out;
    }
    plain_.clear();
    // An alert after the handshake (TLS 1.3 refuses a client certificate only
    // then) fails the read, with the reason the server gave: the plaintext
    // before it is still delivered first.
    if (!session_->read(plain_)) out.failure = "TLS: " + session_->error();
    out.plain = plain_;
    // TLS 1.3 may answer a read (a key update): the next flush sends it.
    if (session_->has_output()) out.flush = true;
    return out;
}

}  // namespace redlock::detail
