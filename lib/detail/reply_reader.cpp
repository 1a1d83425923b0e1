#include "detail/reply_reader.hpp"

#include <exception>

namespace redlock::detail {
namespace {

// hiredis's own object functions, wrapped: ours count, then call them.
auto defaults() -> const redisReplyObjectFunctions& {
    static const redisReplyObjectFunctions fns = [] {
        redisReader* probe = redisReaderCreate();
        if (probe == nullptr) std::terminate();  // out of memory at start-up
        const redisReplyObjectFunctions copy = *probe->fn;
        redisReaderFree(probe);
        return copy;
    }();
    return fns;
}

auto budget_of(const redisReadTask* task) -> reply_reader::budget& {
    return *static_cast<reply_reader::budget*>(task->privdata);
}

// Returning null makes hiredis stop with an error; `exceeded` says which limit.
auto create_array(const redisReadTask* task, int elements) -> void* {
    auto& used = budget_of(task);
    const auto n = static_cast<std::size_t>(elements > 0 ? elements : 0);
    if (n > reply_reader::max_elements - used.elements) {
        used.exceeded = "a reply with more than 65536 array elements";
        return nullptr;
    }
    used.elements += n;
    return defaults().createArray(task, elements);
}

auto create_string(const redisReadTask* task, char* str, std::size_t len) -> void* {
    auto& used = budget_of(task);
    if (len > reply_reader::max_bytes - used.bytes) {
        used.exceeded = "a reply larger than 16 MiB";
        return nullptr;
    }
    used.bytes += len;
    return defaults().createString(task, str, len);
}

auto create_integer(const redisReadTask* task, long long value) -> void* {
    return defaults().createInteger(task, value);
}

auto create_nil(const redisReadTask* task) -> void* {
    return defaults().createNil(task);
}

void free_object(void* reply) {
    defaults().freeObject(reply);
}

redisReplyObjectFunctions bounded_functions{create_string, create_array, create_integer, create_nil,
                                            free_object};

}  // namespace

reply_reader::reply_reader() {
    reset();
}

reply_reader::~reply_reader() {
    if (reader_ != nullptr) redisReaderFree(reader_);
}

void reply_reader::reset() {
    if (reader_ != nullptr) redisReaderFree(reader_);
    reader_ = redisReaderCreateWithFunctions(&bounded_functions);
    if (reader_ == nullptr) std::terminate();  // out of memory
    reader_->privdata = &used_;
    used_ = budget{};
}

auto reply_reader::feed(const char* data, std::size_t len) -> bool {
    return redisReaderFeed(reader_, data, len) == REDIS_OK;
}

auto reply_reader::next(redisReply** out) -> bool {
    void* raw = nullptr;
    *out = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) return false;
    if (raw != nullptr) {
        used_.elements = 0;  // a new reply starts from a full budget
        used_.bytes = 0;
        *out = static_cast<redisReply*>(raw);
    }
    return true;
}

auto reply_reader::unparsed() const noexcept -> std::size_t {
    return reader_->len - reader_->pos;
}

auto reply_reader::error() const -> std::string {
    if (used_.exceeded != nullptr) return used_.exceeded;
    return reader_->errstr;
}

}  // namespace redlock::detail
