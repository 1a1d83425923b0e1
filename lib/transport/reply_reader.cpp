#include "transport/reply_reader.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

namespace redlock::detail {
namespace {

auto budget_of(const redisReadTask* task) -> reply_reader::budget& {
    return *static_cast<reply_reader::budget*>(task->privdata);
}

// A value and what it holds in one block: the reply, then its text or its element table.
auto make(const redisReadTask* task, reply_kind kind, std::size_t extra) -> reply* {
    void* block = std::malloc(sizeof(reply) + extra);
    if (block == nullptr) return nullptr;  // hiredis reports "Out of memory"
    auto* r = new (block) reply{};
    r->kind = kind;
    if (task->parent != nullptr) {
        // The parent's element table is ours (make() for an array): fill slot idx.
        auto* parent = static_cast<reply*>(task->parent->obj);
        const_cast<const reply**>(parent->elements.data())[task->idx] = r;
    }
    return r;
}

auto tail_of(reply* r) -> char* {
    return reinterpret_cast<char*>(r) + sizeof(reply);
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
    reply* r = make(task, reply_kind::array, n * sizeof(const reply*));
    if (r == nullptr) return nullptr;
    auto** table = reinterpret_cast<const reply**>(tail_of(r));
    std::fill_n(table, n, nullptr);
    r->elements = {table, n};
    return r;
}

auto create_string(const redisReadTask* task, char* str, std::size_t len) -> void* {
    auto& used = budget_of(task);
    if (len > reply_reader::max_bytes - used.bytes) {
        used.exceeded = "a reply larger than 16 MiB";
        return nullptr;
    }
    used.bytes += len;
    const reply_kind kind = task->type == REDIS_REPLY_ERROR    ? reply_kind::error
                            : task->type == REDIS_REPLY_STATUS ? reply_kind::status
                                                               : reply_kind::string;
    reply* r = make(task, kind, len);
    if (r == nullptr) return nullptr;
    if (len > 0) std::memcpy(tail_of(r), str, len);
    r->text = {tail_of(r), len};
    return r;
}

auto create_integer(const redisReadTask* task, long long value) -> void* {
    reply* r = make(task, reply_kind::integer, 0);
    if (r != nullptr) r->integer = value;
    return r;
}

auto create_nil(const redisReadTask* task) -> void* {
    return make(task, reply_kind::nil, 0);
}

void free_object(void* value) {
    reply_free{}(static_cast<reply*>(value));
}

// Set by name: hiredis 1.x adds members (double, bool) that stay null, which its reader
// answers as a protocol error; no Redis we speak to sends them to a RESP2 client.
auto bounded_functions() -> redisReplyObjectFunctions* {
    static redisReplyObjectFunctions fns = [] {
        redisReplyObjectFunctions f{};
        f.createString = create_string;
        f.createArray = create_array;
        f.createInteger = create_integer;
        f.createNil = create_nil;
        f.freeObject = free_object;
        return f;
    }();
    return &fns;
}

}  // namespace

void reply_free::operator()(reply* r) const noexcept {
    if (r == nullptr) return;
    for (const reply* e : r->elements) (*this)(const_cast<reply*>(e));
    r->~reply();
    std::free(r);
}

reply_reader::reply_reader() {
    reset();
}

reply_reader::~reply_reader() {
    if (reader_ != nullptr) redisReaderFree(reader_);
}

void reply_reader::reset() {
    if (reader_ != nullptr) redisReaderFree(reader_);
    reader_ = redisReaderCreateWithFunctions(bounded_functions());
    if (reader_ == nullptr) std::terminate();  // out of memory
    reader_->privdata = &used_;
    used_ = budget{};
}

auto reply_reader::feed(const char* data, std::size_t len) -> bool {
    return redisReaderFeed(reader_, data, len) == REDIS_OK;
}

auto reply_reader::next(reply_ptr& out) -> bool {
    void* raw = nullptr;
    out.reset();
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) return false;
    if (raw != nullptr) {
        used_.elements = 0;  // a new reply starts from a full budget
        used_.bytes = 0;
        out.reset(static_cast<reply*>(raw));
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
