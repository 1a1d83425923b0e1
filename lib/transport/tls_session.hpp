#pragma once

#include "redlock/config.hpp"
#include "redlock/diagnostics.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

// OpenSSL's types stay out of every other header: only tls_session.cpp sees them.
using SSL_CTX = struct ssl_ctx_st;
using SSL = struct ssl_st;
using BIO = struct bio_st;

namespace redlock::detail {

/// The OpenSSL side of a client's `tls` settings: one SSL_CTX with the CA,
/// the client certificate and the verification mode, shared by every
/// connection of the client (read-only once built).
class tls_context {
public:
    /// Builds the context. A failure names the field at fault (its JSON
    /// pointer, "/tls/ca_file") and why, OpenSSL's reason included.
    [[nodiscard]] static auto create(const tls_options& options)
        -> std::pair<std::shared_ptr<const tls_context>, std::optional<config_error>>;

    tls_context(const tls_context&) = delete;
    auto operator=(const tls_context&) -> tls_context& = delete;
    ~tls_context();

    [[nodiscard]] auto options() const noexcept -> const tls_options& { return options_; }
    [[nodiscard]] auto native() const noexcept -> SSL_CTX* { return ctx_; }

private:
    tls_context(SSL_CTX* ctx, tls_options options) : ctx_{ctx}, options_{std::move(options)} {}

    SSL_CTX* ctx_;
    tls_options options_;
};

/// One TLS client session over a pair of memory BIOs. It does no I/O: the
/// connection hands it the ciphertext it read and writes the ciphertext it
/// takes out, so that the libuv transport stays the only place with sockets
/// and TLS adds no thread, no blocking call and no callback of its own.
class tls_session {
public:
    /// `host` is the node's host: the name verified (unless the options give
    /// server_name) and sent as SNI when it is a name, not an address.
    tls_session(const tls_context& context, const std::string& host);
    tls_session(const tls_session&) = delete;
    auto operator=(const tls_session&) -> tls_session& = delete;
    ~tls_session();

    /// Advances the handshake with what was fed so far. False on failure
    /// (error() says why: "unknown CA", "name mismatch", ...).
    [[nodiscard]] auto handshake() -> bool;
    [[nodiscard]] auto established() const noexcept -> bool { return established_; }

    /// Ciphertext read from the socket. False if the session cannot take it.
    [[nodiscard]] auto feed(const char* data, std::size_t len) -> bool;
    /// Appends the plaintext that the fed ciphertext decrypts to. False on a
    /// TLS error or an alert from the server (a client certificate refused).
    [[nodiscard]] auto read(std::string& plaintext) -> bool;
    /// Encrypts `plaintext` (established sessions only). False on error.
    [[nodiscard]] auto write(std::string_view plaintext) -> bool;
    /// Appends the ciphertext waiting to be sent (handshake records included).
    void take_output(std::string& wire);
    /// Some ciphertext waits to be sent.
    [[nodiscard]] auto has_output() const noexcept -> bool;

    [[nodiscard]] auto error() const noexcept -> const std::string& { return error_; }

    /// What the handshake settled (established sessions only): the protocol,
    /// the cipher, and whether the node's certificate was verified (its chain
    /// and its name or address), which only a session with verification on can be.
    [[nodiscard]] auto negotiated() const -> tls_info;

private:
    /// Records why the last SSL call with result `rc` failed; false if it did.
    auto check(int rc, const char* during) -> bool;

    SSL* ssl_ = nullptr;
    BIO* in_ = nullptr;   // ciphertext from the node; owned by ssl_
    BIO* out_ = nullptr;  // ciphertext for the node; owned by ssl_
    bool established_ = false;
    bool verify_ = true;  // the certificate is checked (tls_options::verify)
    std::string error_;
};

}  // namespace redlock::detail
