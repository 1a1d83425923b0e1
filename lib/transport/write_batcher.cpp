#include "transport/write_batcher.hpp"

#include "transport/node_connection.hpp"

#include <algorithm>
#include <utility>

namespace redlock::detail {

flush_hooks::flush_hooks(uv_loop_t* loop) {
    uv_prepare_init(loop, &prepare_);
    uv_check_init(loop, &check_);
    prepare_.data = this;
    check_.data = this;
}

void flush_hooks::request(node_connection& connection) {
    if (closing_) return;
    due_.push_back(&connection);
    if (started_) return;
    started_ = true;
    uv_prepare_start(&prepare_, [](uv_prepare_t* h) { static_cast<flush_hooks*>(h->data)->run(); });
    uv_check_start(&check_, [](uv_check_t* h) { static_cast<flush_hooks*>(h->data)->run(); });
}

void flush_hooks::forget(node_connection& connection) noexcept {
    due_.erase(std::remove(due_.begin(), due_.end(), &connection), due_.end());
}

void flush_hooks::stop() {
    started_ = false;
    uv_prepare_stop(&prepare_);
    uv_check_stop(&check_);
}

void flush_hooks::run() {
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

void flush_hooks::close(std::function<void()> done) {
    due_.clear();
    if (!on_closed_.add(std::move(done))) return;
    closing_ = true;
    const auto closed = [](uv_handle_t* h) {
        auto& self = *static_cast<flush_hooks*>(h->data);
        if (--self.open_handles_ == 0) self.on_closed_.closed();
    };
    uv_close(reinterpret_cast<uv_handle_t*>(&prepare_), closed);
    uv_close(reinterpret_cast<uv_handle_t*>(&check_), closed);
}

}  // namespace redlock::detail
