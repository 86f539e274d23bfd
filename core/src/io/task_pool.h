/* Threads that share out a loop's items and sleep between loops. OpenMP's idle threads spin
 * instead (libgomp: up to 300,000 turns, at the caller's priority), which in a streamed run took
 * the cores from the strips' compressing threads: the 10-gigapixel run on the H200 ran 10.4-10.7 s
 * with libgomp told to sleep, 11.3-12.2 s without (bench/RESULTS.md). */
#ifndef IMGPIPE_IO_TASK_POOL_H
#define IMGPIPE_IO_TASK_POOL_H
#include <stddef.h>
#include <stdint.h>

typedef struct task_pool task_pool;

/* fn(user, thread, item): thread is 0 for the caller, 1 .. threads - 1 for the pool's own. */
typedef void (*task_pool_fn)(void *user, int thread, uint64_t item);

/* threads in all, the caller among them (1: no thread is started). 0, or -1 with err set. */
int task_pool_create(task_pool **out, int threads, char *err, size_t errlen);

/* Calls fn once for each item in 0 .. count - 1 on at most `threads` threads (the caller one of
 * them), and returns when every call has returned. One caller at a time. */
void task_pool_run(task_pool *p, uint64_t count, int threads, task_pool_fn fn, void *user);

/* Stops and joins the threads; NULL is fine. */
void task_pool_destroy(task_pool *p);

#endif
