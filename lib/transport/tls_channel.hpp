#pragma once

#include "transport/tls_session.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

/// A node connection's TLS plumbing: one tls_session per connected stream,
/// the ciphertext waiting for the kernel, and the plaintext of the current
/// read. It does no I/O: the connection hands it what it read, and writes out
/// what wire() holds. Failures come back as causes to report, never thrown.
class tls_channel {
public:
    /// What decrypt() made of bytes read from the node.
    struct decrypted {
        std::string_view plain;  ///< for the reply parser first; valid until the next call
        std::string failure;     ///< then, if not empty, why the connection must drop
        bool flush = false;      ///< records wait to be sent (handshake, key update)
    };

    /// A new stream is connected: a new session, its ClientHello written.
    /// Returns the failure cause, or empty.
    auto start(const tls_context& context, const std::string& host) -> std::string;
    /// The stream is closing: the session dies with it.
    void stop() noexcept;

    [[nodiscard]] auto active() const noexcept -> bool { return session_ != nullptr; }
    /// The TLS handshake is done: Redis bytes may go through.
    [[nodiscard]] auto established() const noexcept -> bool {
        return session_ != nullptr && session_->established();
    }

    /// The current session's protocol, cipher and verification, once its
    /// handshake is done; nothing before, or without a session.
    [[nodiscard]] auto negotiated() const -> std::optional<tls_info>;

    /// Encrypts what `plain` holds into wire() once the TLS handshake is done
    /// (emptying it), and moves any records the session has to send there.
    /// Returns the failure cause, or empty.
    auto encrypt_pending(std::string& plain) -> std::string;
    /// Ciphertext read from the node: advances the handshake, and decrypts.
    auto decrypt(const char* data, std::size_t len) -> decrypted;

    /// The ciphertext not yet handed to the kernel.
    [[nodiscard]] auto wire() noexcept -> std::string& { return wire_; }

private:
    std::unique_ptr<tls_session> session_;
    std::string wire_;
    std::string plain_;
};

}  // namespace redlock::detail
