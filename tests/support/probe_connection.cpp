#include "support/probe_connection.hpp"

#include "support/loopback.hpp"

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <utility>

namespace redlock_test {

void reply_deleter::operator()(redisReply* r) const noexcept {
    freeReplyObject(r);
}

namespace {

auto errno_text(const char* what) -> std::string {
    return std::string{what} + ": " + std::strerror(errno);
}

/// The oldest queued OpenSSL error, or `fallback`; clears the queue.
auto openssl_text(const char* what, const char* fallback = "unknown error") -> std::string {
    const unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (code == 0) return std::string{what} + ": " + fallback;
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    return std::string{what} + ": " + text;
}

/// A TCP connection to 127.0.0.1:port within `timeout`, left blocking with
/// `timeout` on every read and write; -1 with `failure` set.
auto connect_tcp(std::uint16_t port, std::chrono::milliseconds timeout, std::string* failure)
    -> int {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *failure = errno_text("socket");
        return -1;
    }
    const sockaddr_in address = loopback(port);
    const auto* generic = reinterpret_cast<const sockaddr*>(&address);
    bool connected = ::connect(fd, generic, sizeof address) == 0;
    if (!connected && errno == EINPROGRESS) {
        pollfd waiting{.fd = fd, .events = POLLOUT, .revents = 0};
        const int ready = ::poll(&waiting, 1, static_cast<int>(timeout.count()));
        int error = 0;
        socklen_t length = sizeof error;
        if (ready == 0) {
            errno = ETIMEDOUT;
        } else if (ready > 0 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0) {
            connected = error == 0;
            errno = error;
        }
    }
    if (!connected) {
        *failure = errno_text("connect");
        ::close(fd);
        return -1;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
    const timeval limit{.tv_sec = micros / 1'000'000, .tv_usec = micros % 1'000'000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    return fd;
}

/// A TLS session over `fd`, handshake done; nullptr with `failure` set.
auto start_tls(int fd, const probe_tls& tls, std::string* failure) -> SSL* {
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context{SSL_CTX_new(TLS_client_method()),
                                                              &SSL_CTX_free};
    if (!context) {
        *failure = openssl_text("SSL_CTX_new");
        return nullptr;
    }
    SSL_CTX_set_verify(context.get(), SSL_VERIFY_NONE, nullptr);
    if (!tls.cert_file.empty() &&
        (SSL_CTX_use_certificate_chain_file(context.get(), tls.cert_file.c_str()) != 1 ||
         SSL_CTX_use_PrivateKey_file(context.get(), tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1)) {
        *failure = openssl_text(("client certificate " + tls.cert_file).c_str());
        return nullptr;
    }
    SSL* ssl = SSL_new(context.get());  // holds its own reference to the context
    if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
        *failure = openssl_text("SSL_new");
        SSL_free(ssl);
        return nullptr;
    }
    if (SSL_connect(ssl) != 1) {
        *failure = openssl_text("TLS handshake", "the server closed or did not answer in time");
        SSL_free(ssl);
        return nullptr;
    }
    return ssl;
}

}  // namespace

auto probe_connection::open(std::uint16_t port, std::chrono::milliseconds timeout,
                            const probe_tls* tls, std::string* failure)
    -> std::optional<probe_connection> {
    std::string ignored;
    if (failure == nullptr) failure = &ignored;
    const int fd = connect_tcp(port, timeout, failure);
    if (fd < 0) return std::nullopt;
    SSL* ssl = nullptr;
    if (tls != nullptr) {
        ssl = start_tls(fd, *tls, failure);
        if (ssl == nullptr) {
            ::close(fd);
            return std::nullopt;
        }
    }
    return probe_connection{fd, ssl};
}

probe_connection::probe_connection(probe_connection&& other) noexcept
    : fd_{std::exchange(other.fd_, -1)}, ssl_{std::exchange(other.ssl_, nullptr)} {}

probe_connection::~probe_connection() {
    if (ssl_ != nullptr) SSL_free(ssl_);  // no close_notify: the socket closes next
    if (fd_ >= 0) ::close(fd_);
}

auto probe_connection::send_all(const std::string& bytes, std::string* failure) -> bool {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const auto left = bytes.size() - sent;
        const long n = ssl_ != nullptr
                           ? SSL_write(ssl_, bytes.data() + sent, static_cast<int>(left))
                           : ::send(fd_, bytes.data() + sent, left, MSG_NOSIGNAL);
        if (n <= 0) {
            *failure = ssl_ != nullptr ? openssl_text("TLS write", "failed or timed out")
                                       : errno_text("send");
            return false;
        }
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

auto probe_connection::receive(char* buffer, int size, std::string* failure) -> int {
    const long n = ssl_ != nullptr ? SSL_read(ssl_, buffer, size)
                                   : ::recv(fd_, buffer, static_cast<std::size_t>(size), 0);
    if (n > 0) return static_cast<int>(n);
    if (n == 0 && ssl_ == nullptr) {
        *failure = "the server closed the connection";
    } else {
        *failure =
            ssl_ != nullptr ? openssl_text("TLS read", "closed or timed out") : errno_text("recv");
    }
    return 0;
}

auto probe_connection::run(const std::vector<std::string>& argv, std::string* failure)
    -> reply_ptr {
    std::string ignored;
    if (failure == nullptr) failure = &ignored;
    std::vector<const char*> args;
    std::vector<std::size_t> lengths;
    for (const auto& a : argv) {
        args.push_back(a.data());
        lengths.push_back(a.size());
    }
    char* formatted = nullptr;
    const int size = redisFormatCommandArgv(&formatted, static_cast<int>(args.size()), args.data(),
                                            lengths.data());
    if (size < 0) {
        *failure = "cannot format the command";
        return nullptr;
    }
    const std::string request{formatted, static_cast<std::size_t>(size)};
    redisFreeCommand(formatted);
    if (!send_all(request, failure)) return nullptr;

    std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader{redisReaderCreate(),
                                                                    &redisReaderFree};
    for (;;) {
        void* parsed = nullptr;
        if (redisReaderGetReply(reader.get(), &parsed) != REDIS_OK) {
            *failure = std::string{"protocol error: "} + reader->errstr;
            return nullptr;
        }
        if (parsed != nullptr) return reply_ptr{static_cast<redisReply*>(parsed)};
        char buffer[16 * 1024];
        const int n = receive(buffer, sizeof buffer, failure);
        if (n == 0) return nullptr;
        redisReaderFeed(reader.get(), buffer, static_cast<std::size_t>(n));
    }
}

}  // namespace redlock_test
