// tls_session without a socket: a client session and an in-memory OpenSSL
// server pass their records by hand, as node_connection passes them through
// libuv. Certificates are made in process (EC P-256), so this stays a unit test.
#include "transport/tls_session.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <string>
#include <unistd.h>

namespace {

using redlock::detail::tls_context;
using redlock::detail::tls_session;

struct key_deleter {
    void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
struct cert_deleter {
    void operator()(X509* c) const noexcept { X509_free(c); }
};
using key_ptr = std::unique_ptr<EVP_PKEY, key_deleter>;
using cert_ptr = std::unique_ptr<X509, cert_deleter>;

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    REQUIRE(ext != nullptr);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
}

/// A certificate for `key`, signed by `issuer` (self-signed when null).
auto make_cert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key, const char* san)
    -> cert_ptr {
    static long serial = 1;
    cert_ptr cert{X509_new()};
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
    X509_set_pubkey(cert.get(), key);
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                               -1, -1, 0);
    X509* signer = issuer != nullptr ? issuer : cert.get();
    X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
    add_extension(cert.get(), signer, NID_basic_constraints,
                  san == nullptr ? "critical,CA:TRUE" : "CA:FALSE");
    if (san != nullptr) add_extension(cert.get(), signer, NID_subject_alt_name, san);
    REQUIRE(X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) > 0);
    return cert;
}

/// Two CAs, a server certificate from the first, and each CA in a PEM file.
struct pki {
    key_ptr ca_key{EVP_EC_gen("P-256")};
    cert_ptr ca = make_cert(ca_key.get(), "unit-ca", nullptr, nullptr, nullptr);
    key_ptr other_key{EVP_EC_gen("P-256")};
    cert_ptr other = make_cert(other_key.get(), "unit-other-ca", nullptr, nullptr, nullptr);
    key_ptr server_key{EVP_EC_gen("P-256")};
    cert_ptr server = make_cert(server_key.get(), "unit-server", ca.get(), ca_key.get(),
                                "DNS:redis.internal,IP:127.0.0.1");
    std::filesystem::path ca_file = write(ca.get(), "ca");
    std::filesystem::path other_file = write(other.get(), "other");

    pki(const pki&) = delete;
    auto operator=(const pki&) -> pki& = delete;
    pki() = default;
    ~pki() {
        std::filesystem::remove(ca_file);
        std::filesystem::remove(other_file);
    }

    static auto write(X509* cert, const char* stem) -> std::filesystem::path {
        auto path = std::filesystem::temp_directory_path() /
                    ("redlock-unit-tls-" + std::to_string(::getpid()) + "-" + stem + ".pem");
        std::FILE* f = std::fopen(path.c_str(), "wb");
        REQUIRE(f != nullptr);
        PEM_write_X509(f, cert);
        std::fclose(f);
        return path;
    }
};

/// An OpenSSL server over memory BIOs, presenting the pki's server certificate.
class memory_server {
public:
    explicit memory_server(const pki& p) : ctx_{SSL_CTX_new(TLS_server_method())} {
        SSL_CTX_use_certificate(ctx_, p.server.get());
        SSL_CTX_use_PrivateKey(ctx_, p.server_key.get());
        ssl_ = SSL_new(ctx_);
        in_ = BIO_new(BIO_s_mem());
        out_ = BIO_new(BIO_s_mem());
        BIO_set_mem_eof_return(in_, -1);
        SSL_set_bio(ssl_, in_, out_);
        SSL_set_accept_state(ssl_);
    }
    memory_server(const memory_server&) = delete;
    auto operator=(const memory_server&) -> memory_server& = delete;
    ~memory_server() {
        SSL_free(ssl_);
        SSL_CTX_free(ctx_);
    }

    /// Hands what the client wrote to the server, lets it work, and back.
    void exchange(tls_session& client) {
        std::string wire;
        client.take_output(wire);
        if (!wire.empty()) BIO_write(in_, wire.data(), static_cast<int>(wire.size()));
        (void)SSL_do_handshake(ssl_);
        std::array<char, 4096> plain{};
        for (int n = 0; (n = SSL_read(ssl_, plain.data(), plain.size())) > 0;) {
            received.append(plain.data(), static_cast<std::size_t>(n));
        }
        std::string back(BIO_ctrl_pending(out_), '\0');
        if (!back.empty()) BIO_read(out_, back.data(), static_cast<int>(back.size()));
        if (!back.empty()) REQUIRE(client.feed(back.data(), back.size()));
    }
    void send(const std::string& text) {
        SSL_write(ssl_, text.data(), static_cast<int>(text.size()));
    }
    /// The ciphertext the server has written and not yet handed over.
    auto take_records() -> std::string {
        std::string wire(BIO_ctrl_pending(out_), '\0');
        if (!wire.empty()) BIO_read(out_, wire.data(), static_cast<int>(wire.size()));
        return wire;
    }

    std::string received;

private:
    SSL_CTX* ctx_;
    SSL* ssl_ = nullptr;
    BIO* in_ = nullptr;
    BIO* out_ = nullptr;
};

/// Runs the handshake to its end; false with the client's error otherwise.
auto handshake(tls_session& client, memory_server& server) -> bool {
    for (int round = 0; round < 8; ++round) {
        if (!client.handshake()) return false;
        server.exchange(client);
        if (client.established()) return true;
    }
    return client.handshake() && client.established();
}

auto context_for(const std::filesystem::path& ca, std::string server_name = {})
    -> std::shared_ptr<const tls_context> {
    redlock::tls_options options;
    options.ca_file = ca.string();
    options.server_name = std::move(server_name);
    // Not a structured binding: clang 14 refuses one captured by a lambda (doctest's macro).
    auto created = tls_context::create(options);
    const auto& problem = created.second;
    REQUIRE_MESSAGE(!problem, (problem ? problem->what() : ""));
    return created.first;
}

}  // namespace

TEST_SUITE("tls_session") {
    TEST_CASE("tls_session: handshake and a round trip by passing bytes, no socket") {
        const pki p;
        const auto context = context_for(p.ca_file);
        for (const char* host : {"127.0.0.1", "redis.internal"}) {
            tls_session client{*context, host};
            memory_server server{p};
            REQUIRE_MESSAGE(handshake(client, server), client.error());
            REQUIRE(client.write("*1\r\n$4\r\nPING\r\n"));
            server.exchange(client);
            CHECK(server.received == "*1\r\n$4\r\nPING\r\n");
            server.send("+PONG\r\n");
            server.exchange(client);
            std::string plain;
            REQUIRE(client.read(plain));
            CHECK(plain == "+PONG\r\n");
        }
    }

    TEST_CASE("tls_session: a certificate from another CA is an unknown CA") {
        const pki p;
        const auto context = context_for(p.other_file);
        tls_session client{*context, "127.0.0.1"};
        memory_server server{p};
        REQUIRE_FALSE(handshake(client, server));
        CHECK(client.error().starts_with("unknown CA ("));
    }

    TEST_CASE("tls_session: the name or address must be in the certificate") {
        const pki p;
        for (const char* host : {"127.0.0.2", "redis.example.org"}) {
            const auto context = context_for(p.ca_file);
            tls_session client{*context, host};
            memory_server server{p};
            REQUIRE_FALSE(handshake(client, server));
            CHECK(client.error().starts_with("name mismatch ("));
        }
        // server_name replaces the node's host in the check.
        const auto renamed = context_for(p.ca_file, "redis.internal");
        tls_session client{*renamed, "10.1.2.3"};
        memory_server server{p};
        CHECK_MESSAGE(handshake(client, server), client.error());
    }

    TEST_CASE("tls_session: read takes all that was fed, however the records fall") {
        const pki p;
        const auto context = context_for(p.ca_file);
        tls_session client{*context, "127.0.0.1"};
        memory_server server{p};
        REQUIRE_MESSAGE(handshake(client, server), client.error());
        std::string plain;

        // Three records in one feed: one read returns all three.
        server.send("+A\r\n");
        server.send("+B\r\n");
        server.send("+C\r\n");
        std::string wire = server.take_records();
        REQUIRE(client.feed(wire.data(), wire.size()));
        REQUIRE(client.read(plain));
        CHECK(plain == "+A\r\n+B\r\n+C\r\n");

        // A record cut in two: nothing until its second half, then all of it.
        plain.clear();
        server.send("+split\r\n");
        wire = server.take_records();
        const std::size_t half = wire.size() / 2;
        REQUIRE(client.feed(wire.data(), half));
        REQUIRE(client.read(plain));
        CHECK(plain.empty());
        REQUIRE(client.feed(wire.data() + half, wire.size() - half));
        REQUIRE(client.read(plain));
        CHECK(plain == "+split\r\n");

        // A whole record and half of the next one: the first now, the rest later.
        plain.clear();
        server.send("+first\r\n");
        server.send("+second\r\n");
        wire = server.take_records();
        const std::size_t cut = wire.size() - 3;
        REQUIRE(client.feed(wire.data(), cut));
        REQUIRE(client.read(plain));
        CHECK(plain == "+first\r\n");
        REQUIRE(client.feed(wire.data() + cut, 3));
        REQUIRE(client.read(plain));
        CHECK(plain == "+first\r\n+second\r\n");

        // More plaintext than one read's buffer (16 KiB): two full records.
        plain.clear();
        const std::string big = "$40000\r\n" + std::string(40000, 'x') + "\r\n";
        server.send(big);
        wire = server.take_records();
        REQUIRE(client.feed(wire.data(), wire.size()));
        REQUIRE(client.read(plain));
        CHECK(plain == big);
    }

    TEST_CASE("tls_session: a server that answers in plain RESP does not speak TLS") {
        const pki p;
        const auto context = context_for(p.ca_file);
        tls_session client{*context, "127.0.0.1"};
        REQUIRE(client.handshake());  // the ClientHello is out
        const std::string resp =
            "-ERR unknown command '\x16\x03\x01', with args beginning with:\r\n";
        REQUIRE(client.feed(resp.data(), resp.size()));
        CHECK_FALSE(client.handshake());
        CHECK_MESSAGE(client.error().starts_with("the server does not speak TLS (a plain port?"),
                      client.error());
    }

    TEST_CASE("tls_session: negotiated names the protocol and cipher, and says what was verified") {
        const pki p;
        const auto context = context_for(p.ca_file);
        tls_session client{*context, "redis.internal"};
        memory_server server{p};
        CHECK(client.negotiated().version.empty());  // nothing settled before the handshake
        REQUIRE_MESSAGE(handshake(client, server), client.error());
        const redlock::tls_info verified = client.negotiated();
        CHECK(verified.version == "TLSv1.3");
        CHECK(verified.cipher.starts_with("TLS_"));
        CHECK(verified.verified);

        // Verification off: the same server, encrypted, its certificate taken unchecked.
        redlock::tls_options options;
        options.verify = false;
        auto [blind, problem] = tls_context::create(options);
        REQUIRE_FALSE(problem);
        tls_session unchecked{*blind, "redis.internal"};
        memory_server other{p};
        REQUIRE_MESSAGE(handshake(unchecked, other), unchecked.error());
        const redlock::tls_info taken = unchecked.negotiated();
        CHECK(taken.version == "TLSv1.3");
        CHECK_FALSE(taken.cipher.empty());
        CHECK_FALSE(taken.verified);
    }
}
