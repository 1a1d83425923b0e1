// client_core: reentrant acquisitions (lock_options::owner). The registry is
// loop-thread data; the hold count is an atomic in lock_state, since a release
// may come from any thread.
#include "client/client_core.hpp"
#include "transport/callback_guard.hpp"
#include "operations/lock_state.hpp"

#include <utility>

namespace redlock::detail {

auto client_core::reenter(client::acquire_ticket ticket, std::vector<std::string>& resources,
                          lock_options& options, client::acquire_callback& done) -> bool {
    if (!options.owner || options.owner->empty()) return false;  // not reentrant
    std::string key = reentry_registry::key_of(resources, options);
    if (auto held = reentries_.reenter(key)) {
        counters_.acquired.fetch_add(1, std::memory_order_relaxed);
        complete_later([done = std::move(done), held = std::move(held)]() mutable {
            call_guarded([&] { done(lock_state::handle(std::move(held))); });
        });
        return true;
    }
    if (reentries_.in_flight(key)) {
        // The owner's first acquisition decides: held, this one re-enters it;
        // failed, this one tries on its own.
        reentries_.wait(
            key, ticket,
            [this, ticket, resources = std::move(resources), options = std::move(options),
             done = std::move(done)](bool cancelled) mutable {
                if (cancelled) {
                    refuse(std::move(done), errc::cancelled,
                           "for its owner's acquisition in flight (lock_options::owner)");
                    return;
                }
                if (stopping_) {
                    refuse_stopped(std::move(done));
                    return;
                }
                start_acquire(ticket, std::move(resources), std::move(options), std::move(done));
            });
        return true;
    }
    reentries_.begin(key);
    done = [this, key = std::move(key), done = std::move(done)](result<lock> outcome) mutable {
        reentries_.end(key, outcome ? lock_state::of(*outcome) : nullptr);
        done(std::move(outcome));
    };
    return false;
}

}  // namespace redlock::detail
