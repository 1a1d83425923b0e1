// The README's "Lock kinds" example, compiled so that it cannot rot: a reader,
// a writer that waits for it, a semaphore's permit, and a reentrant hold.
#include <redlock/redlock.hpp>

#include <chrono>
#include <cstdio>

int main(int argc, char** argv) {
    using namespace std::chrono_literals;
    auto config = redlock::load_config(argc > 1 ? argv[1] : "configs/local.json");
    if (!config) return std::fprintf(stderr, "%s\n", config.error().what().c_str()), 78;
    auto locks = redlock::client::create(*config);
    if (!locks) return std::fprintf(stderr, "%s\n", locks.error().message.c_str()), 78;

    redlock::lock_options read{.ttl = 5s};
    read.shared = true;  // many readers at once; no writer meanwhile
    auto reader = locks->acquire("report", read);
    if (!reader) return std::fprintf(stderr, "%s\n", reader.error().message.c_str()), 75;
    {
        redlock::guard release_on_exit{*locks, *reader};
        std::printf("reading 'report' (fence %llu)\n",
                    static_cast<unsigned long long>(reader->fence().value_or(0)));
    }

    redlock::lock_options write{.ttl = 5s, .max_wait = 2s};  // a writer: the exclusive lock
    if (auto writer = locks->acquire("report", write)) {
        redlock::guard release_on_exit{*locks, *writer};
        std::printf("writing 'report'\n");
    }

    redlock::lock_options pool{.ttl = 5s};
    pool.permits = 4;  // at most 4 hold "gpu" at once
    if (auto lease = locks->acquire("gpu", pool)) {
        redlock::guard release_on_exit{*locks, *lease};
        std::printf("holding permit %d of 4\n", lease->permit().value_or(-1));
    }

    redlock::lock_options mine{.ttl = 5s};
    mine.owner = "job-7";  // reentrant for this owner, on this client
    auto outer = locks->acquire("orders", mine);
    auto inner = locks->acquire("orders", mine);  // the same lock, a second hold
    if (outer && inner) {
        std::printf("'orders' held %d times\n", outer->holds());
        (void)locks->release(*inner);  // one hold left: nothing sent
        (void)locks->release(*outer);  // the last: released on the nodes
    }
    return 0;
}
