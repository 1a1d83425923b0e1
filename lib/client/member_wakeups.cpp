#include "client/member_wakeups.hpp"

namespace redlock::detail {

void wire_wakeups(std::vector<std::unique_ptr<quorum_member>>& members, waiter_registry& waiters,
                  const std::string& channel) {
    for (auto& m : members) {
        if (routed_member* r = m->routed())
            r->set_wake(channel,
                        [&waiters](std::string_view message) { waiters.on_message(message); });
    }
    waiters.set_shard_watcher([&members](const std::string& ch, std::uint16_t slot, bool on) {
        for (auto& m : members)
            if (routed_member* r = m->routed()) r->watch(ch, slot, on);
    });
    waiters.set_routed_hearing([&members] {
        for (const auto& m : members)
            if (const routed_member* r = m->routed(); r != nullptr && !r->hears_wakeups())
                return false;
        return true;
    });
}

}  // namespace redlock::detail
