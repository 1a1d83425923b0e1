// Heap allocations per TLS round trip on the client side, measured on the
// library's own tls_session (the class the transport uses) against an
// in-process OpenSSL server, with no sockets: what a lock's TLS costs in
// allocations, apart from everything else a lock does. bench/tls.sh runs it.
//
//   redlock_tls_records SERVER_CERT SERVER_KEY CA_CERT [ROUND_TRIPS]
//
// One round trip is what each node sees per command at 1 in flight: the
// client encrypts a SET (one record out), the server answers +OK, the client
// decrypts it (one record in). Printed for TLS 1.3 (what Redis 7 and the
// library negotiate by default) and with the server held to TLS 1.2.
#include "alloc_counter.hpp"
#include "transport/tls_session.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <openssl/ssl.h>
#include <string>

namespace {

using redlock::bench::allocations;
using redlock::detail::tls_context;
using redlock::detail::tls_session;

/// An in-process server over two memory BIOs: what it reads is what the
/// client wrote, and what it writes the client is fed.
struct server_side {
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl{nullptr, &SSL_free};
    BIO* in = nullptr;
    BIO* out = nullptr;

    void take(const std::string& wire) const {
        BIO_write(in, wire.data(), static_cast<int>(wire.size()));
    }
    [[nodiscard]] auto give() const -> std::string {
        std::string wire(BIO_ctrl_pending(out), '\0');
        const int n = BIO_read(out, wire.data(), static_cast<int>(wire.size()));
        wire.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        return wire;
    }
};

auto fail(const std::string& why) -> int {
    std::fprintf(stderr, "redlock_tls_records: %s\n", why.c_str());
    return 1;
}

/// Client allocations per round trip, or a negative number after printing why.
auto measure(const char* cert, const char* key, const char* ca, bool tls12, long rounds) -> double {
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> server_ctx{SSL_CTX_new(TLS_server_method()),
                                                                 &SSL_CTX_free};
    if (!server_ctx || SSL_CTX_use_certificate_chain_file(server_ctx.get(), cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(server_ctx.get(), key, SSL_FILETYPE_PEM) != 1) {
        fail(std::string{"cannot load the server certificate "} + cert + " or key " + key);
        return -1;
    }
    if (tls12) SSL_CTX_set_max_proto_version(server_ctx.get(), TLS1_2_VERSION);
    server_side server;
    server.ssl.reset(SSL_new(server_ctx.get()));
    server.in = BIO_new(BIO_s_mem());
    server.out = BIO_new(BIO_s_mem());
    SSL_set_bio(server.ssl.get(), server.in, server.out);
    SSL_set_accept_state(server.ssl.get());

    redlock::tls_options options;
    options.ca_file = ca;
    auto [context, problem] = tls_context::create(options);
    if (!context) {
        fail(problem ? problem->message : "cannot create the client context");
        return -1;
    }
    tls_session client{*context, "127.0.0.1"};
    std::string wire;
    std::string plaintext;
    for (int step = 0; step < 10 && !client.established(); ++step) {
        if (!client.handshake()) {
            fail("TLS handshake failed: " + client.error());
            return -1;
        }
        wire.clear();
        client.take_output(wire);
        server.take(wire);
        SSL_do_handshake(server.ssl.get());
        const std::string back = server.give();
        if (!client.feed(back.data(), back.size())) return -1;
    }
    if (!client.established()) {
        fail("the TLS handshake did not finish");
        return -1;
    }
    const std::string request =
        "*3\r\n$3\r\nSET\r\n$9\r\nredlock:x\r\n$22\r\n0123456789abcdefghijkl\r\n";
    std::uint64_t counted = 0;
    char buffer[4096];
    for (long i = -100; i < rounds; ++i) {  // 100 to warm up: session tickets, buffers
        const std::uint64_t a = allocations();
        wire.clear();
        const bool written = client.write(request);
        client.take_output(wire);
        const std::uint64_t b = allocations();
        server.take(wire);
        (void)SSL_read(server.ssl.get(), buffer, sizeof buffer);
        (void)SSL_write(server.ssl.get(), "+OK\r\n", 5);
        const std::string back = server.give();
        const std::uint64_t c = allocations();
        plaintext.clear();
        const bool read = client.feed(back.data(), back.size()) && client.read(plaintext);
        if (!written || (!read && !client.error().empty()) || plaintext != "+OK\r\n") {
            fail("round trip " + std::to_string(i) + " failed: " + client.error());
            return -1;
        }
        if (i >= 0) counted += (b - a) + (allocations() - c);
    }
    return static_cast<double>(counted) / static_cast<double>(rounds);
}

}  // namespace

auto main(int argc, char** argv) -> int {
    if (argc < 4) {
        return fail("usage: redlock_tls_records SERVER_CERT SERVER_KEY CA_CERT [ROUND_TRIPS]");
    }
    const long rounds = argc > 4 ? std::strtol(argv[4], nullptr, 10) : 10000;
    if (rounds <= 0) return fail(std::string{"ROUND_TRIPS must be > 0, not "} + argv[4]);
    const double tls13 = measure(argv[1], argv[2], argv[3], false, rounds);
    const double tls12 = measure(argv[1], argv[2], argv[3], true, rounds);
    if (tls13 < 0 || tls12 < 0) return 1;
    std::printf(
        "client heap allocations per TLS round trip (one record out, one in): "
        "TLS 1.3 %.2f, TLS 1.2 %.2f (%ld round trips each)\n",
        tls13, tls12, rounds);
    return 0;
}
