/* What one sleep and wake-up in epoll_wait costs the thread that sleeps, in CPU time, and
 * the thread that wakes it.
 *
 * A waker thread on CPU 1 writes an eventfd every GAP µs (busy-waiting in between); the
 * sleeper on CPU 0 waits for it in epoll_wait and reads it. The sleeper's own CPU time
 * (getrusage RUSAGE_THREAD) over the wake-ups is what a load generator pays each time it
 * runs out of responses and sleeps: docs/engine.md uses it to explain the keep-alive ratio.
 * The waker's time in write() is what the server pays to wake a sleeping client (an
 * eventfd write that wakes nobody takes a fraction of a microsecond).
 *
 *   cc -O2 -pthread bench/wakeup_cost.c -o /tmp/wakeup_cost
 *   /tmp/wakeup_cost 20 100000     # gap 20 µs, 100,000 wake-ups (about 2 s)
 *   /tmp/wakeup_cost 20 100000 -1  # the same, epoll_wait without a timeout
 *
 * The third argument is epoll_wait's timeout in ms (default 50, as the load generator's
 * poll had before it ticked a timerfd instead): with a timeout, every sleep also starts
 * and cancels a kernel timer.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int efd;
static long gap_ns, wakes;
static int timeout_ms = 50;
static long write_ns; /* the waker's time in write(), which wakes the sleeper */
static volatile int done;

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *waker(void *arg) {
    (void)arg;
    pin(1);
    uint64_t one = 1;
    for (long i = 0; i < wakes; i++) {
        long until = now_ns() + gap_ns;
        while (now_ns() < until)
            ;
        long t0 = now_ns();
        if (write(efd, &one, 8) != 8)
            break;
        write_ns += now_ns() - t0;
    }
    done = 1;
    if (write(efd, &one, 8) != 8)
        return NULL;
    return NULL;
}

static double cpu_s(void) {
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4 || atol(argv[1]) <= 0 || atol(argv[2]) <= 0 ||
        atol(argv[2]) > 10000000 || (argc == 4 && atoi(argv[3]) < -1)) {
        fprintf(stderr, "usage: wakeup_cost GAP_US WAKEUPS [TIMEOUT_MS] (WAKEUPS at most "
                        "10000000; TIMEOUT_MS -1 for none, default 50)\n");
        return 2;
    }
    if (argc == 4)
        timeout_ms = atoi(argv[3]);
    gap_ns = atol(argv[1]) * 1000L;
    wakes = atol(argv[2]);
    pin(0);
    efd = eventfd(0, EFD_NONBLOCK);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
    pthread_t t;
    pthread_create(&t, NULL, waker, NULL);
    long got = 0;
    double start = cpu_s();
    while (!done) {
        struct epoll_event out[8];
        uint64_t v;
        if (epoll_wait(ep, out, 8, timeout_ms) > 0 && read(efd, &v, 8) == 8)
            got++;
    }
    double used = cpu_s() - start;
    pthread_join(t, NULL);
    printf("gap %ld us, timeout %d ms: %ld wake-ups, sleeper CPU %.2f us per wake-up, "
           "waker's write %.2f us\n",
           gap_ns / 1000, timeout_ms, got, used * 1e6 / (got ? got : 1),
           write_ns / 1e3 / (wakes ? wakes : 1));
    return 0;
}
