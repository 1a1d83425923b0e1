// TLS through OpenSSL with memory BIOs: the session turns ciphertext into
// plaintext and back, and the node connection moves the bytes. Errors become
// short reasons a reader can act on ("unknown CA", "name mismatch"), with
// OpenSSL's own text in parentheses.
#include "transport/tls_session.hpp"

#include <climits>

#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <new>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace redlock::detail {
namespace {

/// The reason of the oldest error OpenSSL queued on this thread, and clears them.
auto openssl_reason() -> std::string {
    const unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (code == 0) return "no reason given by OpenSSL";
    const char* reason = ERR_reason_error_string(code);
    if (reason != nullptr) return reason;
    std::array<char, 256> text{};
    ERR_error_string_n(code, text.data(), text.size());
    return text.data();
}

/// Empties this thread's OpenSSL error queue, which SSL_get_error needs empty
/// before the call it explains. Peeking first: ERR_clear_error costs over a
/// thousand instructions in OpenSSL 3.0 even on an empty queue, and the hot
/// path calls this around every record.
void clear_stale_errors() {
    if (ERR_peek_error() != 0) ERR_clear_error();
}

/// Why the node's certificate was refused, for a person: the cause first.
auto verify_reason(long code) -> std::string {
    const char* detail = X509_verify_cert_error_string(code);
    std::string reason;
    switch (code) {
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            reason = "unknown CA";
            break;
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH:
            reason = "name mismatch";
            break;
        case X509_V_ERR_CERT_HAS_EXPIRED:
            reason = "certificate expired";
            break;
        case X509_V_ERR_CERT_NOT_YET_VALID:
            reason = "certificate not yet valid";
            break;
        default:
            reason = "certificate refused";
            break;
    }
    return reason + " (" + (detail != nullptr ? detail : "?") + ")";
}

auto is_ip_literal(const std::string& host) -> bool {
    std::array<unsigned char, 16> buffer{};
    return inet_pton(AF_INET, host.c_str(), buffer.data()) == 1 ||
           inet_pton(AF_INET6, host.c_str(), buffer.data()) == 1;
}

auto file_problem(std::string field, const std::string& path, const char* what)
    -> std::optional<config_error> {
    return config_error{
        "", std::move(field),
        std::string{"cannot load "} + what + " from \"" + path + "\": " + openssl_reason()};
}

}  // namespace

auto tls_context::create(const tls_options& options)
    -> std::pair<std::shared_ptr<const tls_context>, std::optional<config_error>> {
    ERR_clear_error();
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) {
        return {nullptr,
                config_error{"", "/tls", "cannot create a TLS context: " + openssl_reason()}};
    }
    // Owned from here: a failure below frees it with the half-built context.
    std::shared_ptr<const tls_context> built{new (std::nothrow) tls_context{ctx, options}};
    if (!built) {
        SSL_CTX_free(ctx);
        return {nullptr, config_error{"", "/tls", "out of memory"}};
    }
    // TLS 1.0 and 1.1 are broken; Redis 6+ speaks 1.2 and 1.3.
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    // Not SSL_MODE_RELEASE_BUFFERS: it saves ~34 KiB per idle connection, but
    // frees and allocates the record buffers around every command at 1 in
    // flight (6 allocations per round trip instead of 4; redlock_tls_records).
    if (options.verify) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
        if (options.ca_file.empty()) {
            if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
                return {nullptr, config_error{"", "/tls/ca_file",
                                              "cannot load the system's CAs: " + openssl_reason()}};
            }
        } else if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
            return {nullptr, file_problem("/tls/ca_file", options.ca_file, "CA certificates")};
        }
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    }
    if (!options.cert_file.empty()) {
        if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1)
            return {nullptr, file_problem("/tls/cert_file", options.cert_file, "a certificate")};
        const bool key_loaded =
            SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) == 1;
        // OpenSSL 3 compares the key with the certificate while loading it.
        const bool mismatch =
            !key_loaded && ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
        if (!key_loaded && !mismatch)
            return {nullptr, file_problem("/tls/key_file", options.key_file, "a private key")};
        if (mismatch || SSL_CTX_check_private_key(ctx) != 1) {
            return {nullptr, config_error{"", "/tls/key_file",
                                          "does not match /tls/cert_file: " + openssl_reason()}};
        }
    }
    return {std::move(built), std::nullopt};
}

tls_context::~tls_context() {
    SSL_CTX_free(ctx_);
}

tls_session::tls_session(const tls_context& context, const std::string& host) {
    ERR_clear_error();
    ssl_ = SSL_new(context.native());
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    if (ssl_ == nullptr || in_ == nullptr || out_ == nullptr) {
        BIO_free(in_);
        BIO_free(out_);
        in_ = out_ = nullptr;
        error_ = "cannot start a TLS session: " + openssl_reason();
        return;
    }
    // An empty input BIO means "wait for more", not end of stream.
    BIO_set_mem_eof_return(in_, -1);
    SSL_set_bio(ssl_, in_, out_);
    SSL_set_connect_state(ssl_);
    const tls_options& options = context.options();
    verify_ = options.verify;
    const std::string& name = options.server_name.empty() ? host : options.server_name;
    const bool ip = is_ip_literal(name);
    // SNI carries names only (RFC 6066 forbids addresses in it).
    // (SSL_set_tlsext_host_name is this call behind an old-style cast.)
    if (!ip) {
        SSL_ctrl(ssl_, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(name.c_str()));
    }
    if (options.verify) {
        // The CA check alone would accept any server that CA certified.
        const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str())
                          : SSL_set1_host(ssl_, name.c_str());
        if (ok != 1) error_ = "cannot verify the name \"" + name + "\": " + openssl_reason();
    }
}

tls_session::~tls_session() {
    SSL_free(ssl_);  // frees both BIOs, which it owns
}

auto tls_session::check(int rc, const char* during) -> bool {
    const int code = SSL_get_error(ssl_, rc);
    if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
        clear_stale_errors();
        return true;
    }
    if (code == SSL_ERROR_ZERO_RETURN) {
        error_ = "the server closed the TLS session";
        return false;
    }
    const long verified = SSL_get_verify_result(ssl_);
    // Without verification the result is still computed, but is not why a handshake failed.
    if (verify_ && !established_ && verified != X509_V_OK) {
        ERR_clear_error();
        error_ = verify_reason(verified);
        return false;
    }
    const unsigned long first = ERR_peek_error();
    const int reason = ERR_GET_REASON(first);
    if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED) {
        ERR_clear_error();
        error_ = "client certificate required by the server (set /tls/cert_file and key_file)";
        return false;
    }
    if (!established_ &&
        (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
         reason == SSL_R_UNKNOWN_PROTOCOL)) {
        error_ =
            "the server does not speak TLS (a plain port? then say \"tls\": false for the "
            "node) (" +
            openssl_reason() + ")";
        return false;
    }
    if (reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE || reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA) {
        error_ = "client certificate refused by the server (" + openssl_reason() + ")";
        return false;
    }
    error_ = std::string{during} + ": " + openssl_reason();
    return false;
}

auto tls_session::handshake() -> bool {
    if (!error_.empty()) return false;
    if (established_) return true;
    clear_stale_errors();
    const int rc = SSL_do_handshake(ssl_);
    if (rc == 1) {
        established_ = true;
        return true;
    }
    return check(rc, "handshake failed");
}

auto tls_session::feed(const char* data, std::size_t len) -> bool {
    if (!error_.empty()) return false;
    while (len > 0) {
        const int chunk = static_cast<int>(std::min<std::size_t>(len, INT_MAX));
        const int n = BIO_write(in_, data, chunk);
        if (n <= 0) {
            error_ = "out of memory for TLS input";
            return false;
        }
        data += n;
        len -= static_cast<std::size_t>(n);
    }
    return true;
}

auto tls_session::read(std::string& plaintext) -> bool {
    if (!error_.empty()) return false;
    // One TLS record at most. Not value-initialized: zeroing 16 KiB on every
    // read cost more instructions than decrypting the record (callgrind).
    std::array<char, 16 * 1024> buffer;  // NOLINT(cppcoreguidelines-pro-type-member-init)
    for (;;) {
        clear_stale_errors();
        const int n = SSL_read(ssl_, buffer.data(), static_cast<int>(buffer.size()));
        if (n <= 0) return check(n, "TLS read failed");
        plaintext.append(buffer.data(), static_cast<std::size_t>(n));
        // Nothing decrypted left, nothing buffered, nothing fed: another
        // SSL_read would only say "want read" (skipping it saves about a
        // fifth of the read path's instructions).
        if (SSL_pending(ssl_) == 0 && SSL_has_pending(ssl_) == 0 && BIO_ctrl_pending(in_) == 0) {
            return true;
        }
    }
}

auto tls_session::write(std::string_view plaintext) -> bool {
    if (!error_.empty()) return false;
    while (!plaintext.empty()) {
        clear_stale_errors();
        const int chunk = static_cast<int>(std::min<std::size_t>(plaintext.size(), INT_MAX));
        const int n = SSL_write(ssl_, plaintext.data(), chunk);
        if (n <= 0) {
            (void)check(n, "TLS write failed");
            if (error_.empty()) error_ = "TLS write failed: the session wants to renegotiate";
            return false;
        }
        plaintext.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

auto tls_session::negotiated() const -> tls_info {
    tls_info info;
    if (ssl_ == nullptr || !established_) return info;
    info.version = SSL_get_version(ssl_);
    const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl_);
    if (cipher != nullptr) info.cipher = SSL_CIPHER_get_name(cipher);
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    const bool certified = SSL_get0_peer_certificate(ssl_) != nullptr;
#else
    X509* peer = SSL_get_peer_certificate(ssl_);
    const bool certified = peer != nullptr;
    X509_free(peer);
#endif
    // Without verification OpenSSL still computes a result, but checked no
    // name against the certificate: the node is not known, whatever it says.
    info.verified = verify_ && certified && SSL_get_verify_result(ssl_) == X509_V_OK;
    return info;
}

auto tls_session::has_output() const noexcept -> bool {
    return out_ != nullptr && BIO_ctrl_pending(out_) > 0;
}

void tls_session::take_output(std::string& wire) {
    if (!has_output()) return;
    const std::size_t pending = BIO_ctrl_pending(out_);
    const std::size_t at = wire.size();
    wire.resize(at + pending);
    const int n = BIO_read(out_, wire.data() + at, static_cast<int>(pending));
    wire.resize(at + static_cast<std::size_t>(std::max(n, 0)));
}

}  // namespace redlock::detail
