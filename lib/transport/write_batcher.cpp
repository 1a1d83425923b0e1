#include "transport/write_batcher.hpp"

#include "transport/node_connection.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace redlock::detail {

write_batcher::write_batcher(uv_loop_t* loop) {
    if (prepare_.open([loop](uv_prepare_t* h) { return uv_prepare_init(loop, h); }) != 0 ||
        check_.open([loop](uv_check_t* h) { return uv_check_init(loop, h); }) != 0) {
        std::terminate();  // out of memory before the client could start
    }
}

void write_batcher::request(node_connection& connection) {
    if (closing_) return;
    due_.push_back(&connection);
    if (started_) return;
    started_ = true;
    uv_prepare_start(prepare_.get(), [](uv_prepare_t* h) { prepare_handle::owner_of(h).run(); });
    uv_check_start(check_.get(), [](uv_check_t* h) { check_handle::owner_of(h).run(); });
}

void write_batcher::forget(node_connection& connection) noexcept {
    due_.erase(std::remove(due_.begin(), due_.end(), &connection), due_.end());
}

void write_batcher::stop() {
    started_ = false;
    uv_prepare_stop(prepare_.get());
    uv_check_stop(check_.get());
}

void write_batcher::run() {
    stop();
    // A flush can deliver failures whose callbacks queue more commands: run
    // those too, now. A hook started from inside this one would only run after
    // the loop had blocked.
    while (!due_.empty()) {
        running_.swap(due_);
        for (node_connection* c : running_) c->on_flush();
        running_.clear();
    }
    if (started_) stop();  // restarted by a request this run has served
}

void write_batcher::close(std::function<void()> done) {
    due_.clear();
    if (!on_closed_.add(std::move(done))) return;
    closing_ = true;
    prepare_.close([](write_batcher& self) { self.handle_closed(); });
    check_.close([](write_batcher& self) { self.handle_closed(); });
}

void write_batcher::handle_closed() {
    if (--open_handles_ == 0) on_closed_.closed();
}

}  // namespace redlock::detail
