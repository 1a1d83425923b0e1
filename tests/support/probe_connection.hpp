#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct redisReply;
struct ssl_st;

namespace redlock_test {

/// The client certificate a probe presents when a TLS server asks for one.
struct probe_tls {
    std::string cert_file;  ///< empty: none
    std::string key_file;
};

struct reply_deleter {
    void operator()(redisReply* r) const noexcept;
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

/// The fixture's own blocking connection to a test server on 127.0.0.1, plain
/// or TLS: the start-up PING and redis_server::command() go through it.
/// Debian's hiredis 0.14 has no TLS, so this one does the TCP connect itself,
/// runs OpenSSL over the socket when asked, and uses hiredis only to format
/// commands and parse replies. It does not verify the server's certificate:
/// it talks to a server the test itself started, and a test of verification
/// must be free to give that server a certificate nobody trusts.
class probe_connection {
public:
    /// Connects within `timeout`, which then bounds every read and write.
    /// nullopt with `failure` set when the TCP connect or the TLS handshake fails.
    static auto open(std::uint16_t port, std::chrono::milliseconds timeout, const probe_tls* tls,
                     std::string* failure) -> std::optional<probe_connection>;

    probe_connection(probe_connection&& other) noexcept;
    auto operator=(probe_connection&&) -> probe_connection& = delete;
    probe_connection(const probe_connection&) = delete;
    auto operator=(const probe_connection&) -> probe_connection& = delete;
    ~probe_connection();

    /// Sends one command and waits for its reply; nullptr with `failure` set when
    /// the connection fails or times out.
    auto run(const std::vector<std::string>& argv, std::string* failure) -> reply_ptr;

private:
    probe_connection(int fd, ssl_st* ssl) noexcept : fd_{fd}, ssl_{ssl} {}
    auto send_all(const std::string& bytes, std::string* failure) -> bool;
    /// Bytes read into `buffer`: > 0, or 0 with `failure` set.
    auto receive(char* buffer, int size, std::string* failure) -> int;

    int fd_ = -1;
    ssl_st* ssl_ = nullptr;
};

}  // namespace redlock_test
