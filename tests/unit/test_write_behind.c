/* The folder worker's writer (run/write_behind.h), on host images: every handed-over write is
 * written on the writer's thread and told once, in order; a hand-over returns only when the write
 * before it was told; wait returns only when none is pending; destroy writes what is still
 * pending; the job's metadata goes into its file; a write that fails tells its message; wait says
 * how long it waited (nothing when none was pending); and IMGPIPE_WRITE_BEHIND=0 turns the writer off. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/image.h"
#include "base/mono_clock.h"
#include "io/io.h"
#include "png_testutil.h"
#include "run/write_behind.h"
#include "testutil.h"

#define MAX_TOLD 16

typedef struct {
    pthread_mutex_t lock;
    int told;                    /* writes told so far */
    int order[MAX_TOLD];         /* the job numbers, as told */
    int rc[MAX_TOLD];
    char err[MAX_TOLD][256];
    int on_caller[MAX_TOLD];     /* told on the thread that handed it over */
    pthread_t caller;
} tally;

typedef struct {
    tally *t;
    int number;
} job_tag;

static void written(void *user, int rc, double encode_ms, const char *err)
{
    job_tag *tag = user;
    tally *t = tag->t;
    pthread_mutex_lock(&t->lock);
    int k = t->told++;
    if (k < MAX_TOLD) {
        t->order[k] = tag->number, t->rc[k] = rc;
        snprintf(t->err[k], sizeof t->err[k], "%s", err);
        t->on_caller[k] = pthread_equal(pthread_self(), t->caller);
    }
    pthread_mutex_unlock(&t->lock);
    CHECK(encode_ms >= 0.0, "job %d: encode time %.3f ms", tag->number, encode_ms);
}

static int told(tally *t)
{
    pthread_mutex_lock(&t->lock);
    int n = t->told;
    pthread_mutex_unlock(&t->lock);
    return n;
}

/* A job writing img (not taken: the caller frees it) to path, with a text entry when key. */
static write_behind_job job_for(const ip_image *img, const char *path, const char *key, job_tag *tag)
{
    write_behind_job job;
    memset(&job, 0, sizeof job);
    job.result = *img;
    job.path = strdup(path);
    run_default_options(&job.o);
    meta_init(&job.meta);
    if (key) meta_add_text(&job.meta, META_TEXT_PLAIN, 0, key, NULL, NULL, "written behind", 14);
    job.on_written = written;
    job.on_written_user = tag;
    return job;
}

static int file_holds(const char *path, const char *text)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t len = strlen(text);
    for (size_t i = 0; i + len <= n; i++)
        if (memcmp(buf + i, text, len) == 0) return 1;
    return 0;
}

static int reads_back_equal(const char *path, const ip_image *img)
{
    char err[256];
    ip_image back = { 0 };
    if (io_read(path, NULL, &back, err, sizeof err) != IP_OK) return 0;
    int same = ptu_same_pixels(&back, img);
    img_free(&back);
    return same;
}

static void in_order(void)
{
    static const int shapes[][3] = { { 1, 1, 1 }, { 1, 37, 3 }, { 37, 1, 4 }, { 257, 13, 3 }, { 101, 103, 1 },
                                     { 640, 480, 3 } };
    enum { N = sizeof shapes / sizeof shapes[0] };
    tally t = { .lock = PTHREAD_MUTEX_INITIALIZER, .caller = pthread_self() };
    job_tag tags[N + 1];
    ip_image imgs[N];
    char paths[N + 1][512];
    char err[256];
    write_behind *wb = NULL;
    CHECK(write_behind_create(&wb, 0, err, sizeof err) == IP_OK && wb, "create: %s", err);
    if (!wb) return;
    for (int i = 0; i < N; i++) {
        imgs[i] = ptu_photo(shapes[i][0], shapes[i][1], shapes[i][2], i == 4 ? IP_U16 : IP_U8, (size_t)i * 3,
                            (uint64_t)i + 1);
        snprintf(paths[i], sizeof paths[i], "%s/behind_%d.png", tu_tmpdir(), i);
        tags[i] = (job_tag){ &t, i };
        write_behind_job job = job_for(&imgs[i], paths[i], i == 2 ? "imgpipe-behind-key" : NULL, &tags[i]);
        write_behind_submit(wb, &job);
        /* the hand-over waited for the write before it */
        CHECK(told(&t) >= i, "job %d handed over with %d of the %d before it told", i, told(&t), i);
    }
    snprintf(paths[N], sizeof paths[N], "%s/no-such-folder/behind.png", tu_tmpdir());
    tags[N] = (job_tag){ &t, N };
    write_behind_job bad = job_for(&imgs[0], paths[N], NULL, &tags[N]);
    write_behind_submit(wb, &bad);
    write_behind_wait(wb);
    CHECK(told(&t) == N + 1, "after wait: %d of %d writes told", told(&t), N + 1);
    for (int k = 0; k < N + 1 && k < t.told; k++) {
        CHECK(t.order[k] == k, "told %d-th: job %d", k, t.order[k]);
        CHECK(!t.on_caller[k], "job %d told on the caller's thread", t.order[k]);
    }
    for (int i = 0; i < N; i++) {
        CHECK(t.rc[i] == IP_OK, "job %d: rc %d (%s)", i, t.rc[i], t.err[i]);
        CHECK(reads_back_equal(paths[i], &imgs[i]), "job %d: %s does not read back equal", i, paths[i]);
    }
    CHECK(file_holds(paths[2], "imgpipe-behind-key"), "the job's metadata is not in its file");
    CHECK(!file_holds(paths[1], "imgpipe-behind-key"), "another job's file holds the metadata");
    CHECK(t.rc[N] != IP_OK && strstr(t.err[N], "cannot create"), "a missing folder: rc %d, \"%s\"", t.rc[N],
          t.err[N]);

    /* destroy with a write still pending: it is written and told first */
    job_tag last = { &t, N + 1 };
    char last_path[512];
    snprintf(last_path, sizeof last_path, "%s/behind_last.png", tu_tmpdir());
    write_behind_job job = job_for(&imgs[5], last_path, NULL, &last);
    write_behind_submit(wb, &job);
    write_behind_destroy(wb);
    CHECK(told(&t) == N + 2, "destroy returned with %d of %d writes told", told(&t), N + 2);
    CHECK(reads_back_equal(last_path, &imgs[5]), "the write pending at destroy does not read back equal");
    for (int i = 0; i < N; i++) img_free(&imgs[i]);
}

/* The write's on_written, held until released_at (a time on now_ms's clock). */
static void written_late(void *user, int rc, double encode_ms, const char *err)
{
    (void)rc, (void)encode_ms, (void)err;
    const double *released_at = user;
    while (now_ms() < *released_at) nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
}

/* wait's time: none while idle; while a write is pending, until its on_written returns. */
static void wait_time(void)
{
    char err[256];
    write_behind *wb = NULL;
    CHECK(write_behind_create(&wb, 0, err, sizeof err) == IP_OK && wb, "create: %s", err);
    if (!wb) return;
    CHECK(write_behind_wait(wb) == 0.0, "idle: waited %.3f ms", write_behind_wait(wb));
    ip_image img = ptu_photo(31, 17, 3, IP_U8, 0, 9);
    char path[512];
    snprintf(path, sizeof path, "%s/behind_wait.png", tu_tmpdir());
    double released_at = now_ms() + 60.0;
    write_behind_job job = job_for(&img, path, NULL, NULL);
    job.on_written = written_late;
    job.on_written_user = &released_at;
    write_behind_submit(wb, &job);
    double called_at = now_ms();
    double waited = write_behind_wait(wb);
    double returned_at = now_ms();
    CHECK(returned_at >= released_at, "wait returned %.1f ms before on_written did", released_at - returned_at);
    /* waited from the call to on_written's return: judged only where the call came well before it */
    if (released_at - called_at > 20.0)
        CHECK(waited >= released_at - called_at - 1.0 && waited <= returned_at - called_at + 1.0,
              "waited %.1f ms, called %.1f ms before the release and returned %.1f ms after the call", waited,
              released_at - called_at, returned_at - called_at);
    CHECK(write_behind_wait(wb) == 0.0, "idle after the write: waited again");
    write_behind_destroy(wb);
    img_free(&img);
}

static void switch_env(void)
{
    unsetenv("IMGPIPE_WRITE_BEHIND");
    CHECK(write_behind_wanted(), "on by default");
    setenv("IMGPIPE_WRITE_BEHIND", "0", 1);
    CHECK(!write_behind_wanted(), "IMGPIPE_WRITE_BEHIND=0 leaves it on");
    setenv("IMGPIPE_WRITE_BEHIND", "1", 1);
    CHECK(write_behind_wanted(), "IMGPIPE_WRITE_BEHIND=1 turns it off");
    unsetenv("IMGPIPE_WRITE_BEHIND");
}

int main(void)
{
    in_order();
    wait_time();
    CHECK(write_behind_wait(NULL) == 0.0, "no writer: waited");
    write_behind_destroy(NULL);
    switch_env();
    return tu_finish();
}
