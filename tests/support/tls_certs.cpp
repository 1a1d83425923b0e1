#include "support/tls_certs.hpp"

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

namespace redlock_test {
namespace {

constexpr const char* ec_key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

auto fresh_dir() -> std::filesystem::path {
    std::random_device seed;
    const auto base = std::filesystem::temp_directory_path() / "redlock-tests";
    std::filesystem::create_directories(base);
    for (int attempt = 0; attempt < 16; ++attempt) {
        auto dir = base / ("tls-" + std::to_string(seed()));
        if (std::filesystem::create_directory(dir)) return dir;
    }
    throw std::runtime_error("tls_certs: cannot create a directory under " + base.string());
}

auto read_all(const std::filesystem::path& file) -> std::string {
    std::ifstream in{file};
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

tls_certs::tls_certs() : dir_{fresh_dir()} {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {  // NOLINT(cert-env33-c)
        throw std::runtime_error(
            "tls_certs: cannot run openssl: it is not on PATH (is the openssl package "
            "installed?)");
    }
    {
        std::ofstream server{dir_ / "server.ext"};
        server << "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n";
        std::ofstream client{dir_ / "client.ext"};
        client << "extendedKeyUsage=clientAuth\n";
    }
    // Two CAs, each certifying one server; the first also certifies a client.
    for (const std::string ca : {"ca", "other-ca"}) {
        run("req -x509 " + std::string{ec_key} + " -days 2 -subj /CN=redlock-test-" + ca +
            " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign,cRLSign" +
            " -keyout " + file((ca + ".key").c_str()) + " -out " + file((ca + ".crt").c_str()));
    }
    const std::vector<std::vector<std::string>> leaves{
        {"server", "ca", "server.ext"},
        {"client", "ca", "client.ext"},
        {"other", "other-ca", "server.ext"},
    };
    for (const auto& leaf : leaves) {
        const std::string& name = leaf[0];
        const std::string& ca = leaf[1];
        run("req " + std::string{ec_key} + " -subj /CN=redlock-test-" + name + " -keyout " +
            file((name + ".key").c_str()) + " -out " + file((name + ".csr").c_str()));
        run("x509 -req -days 2 -in " + file((name + ".csr").c_str()) + " -CA " +
            file((ca + ".crt").c_str()) + " -CAkey " + file((ca + ".key").c_str()) +
            " -CAcreateserial -extfile " + file(leaf[2].c_str()) + " -out " +
            file((name + ".crt").c_str()));
    }
}

tls_certs::~tls_certs() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
}

void tls_certs::run(const std::string& arguments) const {
    const auto log = dir_ / "openssl.log";
    const std::string command = "openssl " + arguments + " >" + log.string() + " 2>&1";
    if (std::system(command.c_str()) != 0) {  // NOLINT(cert-env33-c): a test fixture
        throw std::runtime_error("tls_certs: failed: " + command + "\n" + read_all(log));
    }
}

auto tls_certs::options() const -> redlock::tls_options {
    redlock::tls_options o;
    o.ca_file = ca();
    return o;
}

namespace {

auto tls_only(const tls_certs& certs, const tls_server_options& options,
              std::vector<std::string> extra_args) -> server_options {
    server_options s;
    s.extra_args = std::move(extra_args);
    s.tls = tls_listener{
        .cert_file = options.other_ca ? certs.other_server_cert() : certs.server_cert(),
        .key_file = options.other_ca ? certs.other_server_key() : certs.server_key(),
        .ca_file = certs.ca(),
        .auth_clients = options.auth_clients,
        .client_cert_file = certs.client_cert(),
        .client_key_file = certs.client_key()};
    return s;
}

}  // namespace

tls_server::tls_server(const tls_certs& certs, tls_server_options options,
                       std::vector<std::string> extra_args)
    : server_{tls_only(certs, options, std::move(extra_args))} {}

auto tls_server::tls_address(const std::string& host) const -> redlock::node_address {
    redlock::node_address a;
    a.host = host;
    a.port = server_.port();
    return a;
}

}  // namespace redlock_test
