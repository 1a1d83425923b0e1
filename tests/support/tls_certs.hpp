#pragma once

#include "support/redis_server.hpp"

#include <redlock/config.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace redlock_test {

/// Throwaway certificates made with the openssl command-line tool in a fresh
/// temporary directory (removed by the destructor): a CA with a server
/// certificate for 127.0.0.1 and localhost and a client certificate, and
/// another CA with a server certificate of its own. EC P-256 keys: RSA key
/// generation would cost the suite seconds. Throws std::runtime_error when
/// openssl is missing or fails (a loud failure, never a skip).
class tls_certs {
public:
    tls_certs();
    tls_certs(const tls_certs&) = delete;
    auto operator=(const tls_certs&) -> tls_certs& = delete;
    ~tls_certs();

    [[nodiscard]] auto dir() const -> const std::filesystem::path& { return dir_; }
    [[nodiscard]] auto ca() const -> std::string { return file("ca.crt"); }
    [[nodiscard]] auto server_cert() const -> std::string { return file("server.crt"); }
    [[nodiscard]] auto server_key() const -> std::string { return file("server.key"); }
    [[nodiscard]] auto client_cert() const -> std::string { return file("client.crt"); }
    [[nodiscard]] auto client_key() const -> std::string { return file("client.key"); }
    [[nodiscard]] auto other_ca() const -> std::string { return file("other-ca.crt"); }
    [[nodiscard]] auto other_server_cert() const -> std::string { return file("other.crt"); }
    [[nodiscard]] auto other_server_key() const -> std::string { return file("other.key"); }

    /// client_config::tls trusting ca(), verification on.
    [[nodiscard]] auto options() const -> redlock::tls_options;

private:
    [[nodiscard]] auto file(const char* name) const -> std::string {
        return (dir_ / name).string();
    }
    void run(const std::string& arguments) const;

    std::filesystem::path dir_;
};

/// How a tls_server presents itself.
struct tls_server_options {
    bool other_ca = false;      ///< the server certificate of the other CA
    bool auth_clients = false;  ///< --tls-auth-clients yes: a client certificate is required
};

/// A redis_server that serves TLS only (`--port 0 --tls-port`), with the
/// certificates of `certs`; its own checks (server().get() and the like) speak
/// TLS too, presenting the client certificate.
class tls_server {
public:
    /// `extra_args` are appended to redis-server's command line, e.g.
    /// {"--tls-protocols", "TLSv1.2"}.
    explicit tls_server(const tls_certs& certs, tls_server_options options = {},
                        std::vector<std::string> extra_args = {});

    [[nodiscard]] auto server() -> redis_server& { return server_; }
    [[nodiscard]] auto server() const -> const redis_server& { return server_; }
    [[nodiscard]] auto tls_port() const noexcept -> std::uint16_t { return server_.port(); }
    /// {"127.0.0.1", tls_port()}, or `host` instead of 127.0.0.1.
    [[nodiscard]] auto tls_address(const std::string& host = "127.0.0.1") const
        -> redlock::node_address;

private:
    redis_server server_;
};

}  // namespace redlock_test
