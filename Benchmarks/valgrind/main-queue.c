/* Preloaded into a Swift program run under valgrind 3.19 (Debian 12's), which aborts when an
 * async `main` parks the main thread in libdispatch's `dispatch_main()` (it calls pthread_exit
 * and lets a thread-specific destructor wait in sigsuspend). This `dispatch_main` keeps the main
 * thread and serves the main queue itself, through the hooks libdispatch exports for
 * CoreFoundation's run loop. Used by Benchmarks/instructions.sh only. */
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);

void dispatch_main(void) {
    int fd = _dispatch_get_main_queue_handle_4CF();
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    for (;;) {
        struct pollfd ready = {.fd = fd, .events = POLLIN};
        poll(&ready, 1, -1);
        uint64_t count;
        (void)!read(fd, &count, sizeof count);
        _dispatch_main_queue_callback_4CF(0);
    }
}
