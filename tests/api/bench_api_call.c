/* The cost of one warm imgpipe_run on a 64x64 8-bit image on the CPU: the median of 10,000 calls
 * (issue 30's target: under 30 microseconds), for a light pipeline with the default threads and
 * with one thread. Prints the numbers; fails only past 20 times the target, so a loaded machine
 * does not fail the build while a call that allocates or plans from scratch would show. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "api_check.h"

#define CALLS 10000

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_call_us(const char *text, int threads, int channels)
{
    imgpipe_pipeline *p;
    imgpipe_error e;
    if (imgpipe_pipeline_from_text(&p, text, &e) != IMGPIPE_OK) {
        fprintf(stderr, "%s\n", e.message);
        return -1;
    }
    imgpipe_image in = api_random_image(64, 64, channels, IMGPIPE_U8, 0, 1), out = { 0 };
    imgpipe_run_options o;
    imgpipe_run_options_init(&o);
    o.device = IMGPIPE_DEVICE_CPU;
    o.threads = threads;
    imgpipe_output_shape(p, &in, &out, &e);
    out.data = malloc((size_t)out.width * (size_t)out.height * (size_t)out.channels);
    static double t[CALLS];
    int rc = IMGPIPE_OK;
    for (int i = 0; i < 100 && rc == IMGPIPE_OK; i++) rc = imgpipe_run(p, &in, &out, &o, NULL, &e);   /* warm */
    for (int i = 0; i < CALLS && rc == IMGPIPE_OK; i++) {
        double t0 = now_us();
        rc = imgpipe_run(p, &in, &out, &o, NULL, &e);
        t[i] = now_us() - t0;
    }
    if (rc != IMGPIPE_OK) fprintf(stderr, "%s\n", e.message);
    qsort(t, CALLS, sizeof *t, cmp);
    free(in.data);
    free(out.data);
    imgpipe_pipeline_close(p);
    return rc == IMGPIPE_OK ? t[CALLS / 2] : -1;
}

int main(void)
{
    static const struct { const char *text; int channels; } cases[] = {
        { "median radius=1", 1 }, { "grayscale | median radius=1", 3 }, { "transpose", 1 } };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int threads = 0; threads <= 1; threads++) {
            double us = median_call_us(cases[i].text, threads, cases[i].channels);
            printf("imgpipe_run, 64x64 %d-channel u8, '%s', threads %s: median of %d warm calls %.1f us\n",
                   cases[i].channels, cases[i].text, threads ? "1" : "all", CALLS, us);
            if (us < 0 || us > 600) bad++;
        }
    return bad ? 1 : 0;
}
