/* Threads sharing a loop's items (task_pool.h): every item is called exactly once, on a thread
 * index within the run's threads, and the run returns only when every call has; loops of every
 * size (none, fewer items than threads, many) follow one another on the same pool; the pool's
 * threads do take items; a pool of one thread runs the items on the caller. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "io/task_pool.h"
#include "testutil.h"

typedef struct {
    int *calls;            /* per item */
    int threads;           /* the run's */
    int bad_thread;
    int by_thread[16];
    int slow;              /* sleep a little in each call, so helpers get items */
} loop_state;

static void count_item(void *user, int thread, uint64_t item)
{
    loop_state *s = user;
    if (thread < 0 || thread >= s->threads) __atomic_fetch_add(&s->bad_thread, 1, __ATOMIC_RELAXED);
    else __atomic_fetch_add(&s->by_thread[thread], 1, __ATOMIC_RELAXED);
    if (s->slow) nanosleep(&(struct timespec){ 0, 200000 }, NULL);
    __atomic_fetch_add(&s->calls[item], 1, __ATOMIC_RELAXED);
}

/* One loop of count items on `threads`; 1 when every item ran once on a valid thread. */
static int one_loop(task_pool *p, uint64_t count, int threads, int slow, int *helpers_took)
{
    loop_state s = { .calls = calloc(count ? count : 1, sizeof(int)), .threads = threads, .slow = slow };
    task_pool_run(p, count, threads, count_item, &s);
    int ok = s.bad_thread == 0;
    for (uint64_t i = 0; i < count; i++) ok &= s.calls[i] == 1;
    *helpers_took = 0;
    for (int t = 1; t < threads && t < 16; t++) *helpers_took += s.by_thread[t];
    free(s.calls);
    return ok;
}

int main(void)
{
    char err[128];
    int took = 0;
    task_pool *p = NULL;
    CHECK(task_pool_create(&p, 4, err, sizeof err) == 0 && p, "create 4: %s", err);
    const uint64_t counts[] = { 0, 1, 2, 3, 5, 97, 4096 };
    for (int round = 0; p && round < 50; round++)
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
            for (int threads = 1; threads <= 6; threads++)
                CHECK(one_loop(p, counts[k], threads, 0, &took), "round %d: %llu items on %d threads", round,
                      (unsigned long long)counts[k], threads);
    if (p) {
        CHECK(one_loop(p, 200, 4, 1, &took), "200 slow items");
        CHECK(took > 0, "the pool's threads took none of 200 slow items");
        CHECK(one_loop(p, 200, 1, 1, &took) && took == 0, "1 thread: the pool's threads took %d items", took);
    }
    task_pool_destroy(p);
    task_pool *one = NULL;
    CHECK(task_pool_create(&one, 1, err, sizeof err) == 0 && one, "create 1: %s", err);
    if (one) CHECK(one_loop(one, 100, 8, 0, &took), "a pool of one asked for 8 threads");
    task_pool_destroy(one);
    task_pool_destroy(NULL);
    return tu_finish();
}
