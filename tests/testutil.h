/* Small test harness: CHECK counts failures, the run ends with "N passed, N failed". */
#ifndef IMGPIPE_TESTUTIL_H
#define IMGPIPE_TESTUTIL_H
#include <stdint.h>
#include <stdio.h>
#include "ipk.h"

extern int tu_passed, tu_failed;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) { tu_passed++; }                                              \
        else {                                                                  \
            tu_failed++;                                                        \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

/* Prints the summary line; returns the process exit code: 1 when a check failed or none ran. */
int tu_finish(void);
/* Exits 77 (ctest: skipped) after printing one line with the reason. */
void tu_skip(const char *reason);
/* IMGPIPE_TEST_QUICK=1 (scripts/run-tests sets it for the sanitizer build, scripts/gpu-check under
 * compute-sanitizer): a test that repeats one check over a product of settings runs a subset in
 * which every setting still appears. */
int tu_quick(void);

/* Deterministic xorshift generator for reproducible random images. */
typedef struct { uint64_t s; } tu_rng;
void tu_seed(tu_rng *r, uint64_t seed);
uint32_t tu_next(tu_rng *r);

/* A host image with the given padding (stride = row bytes + pad_bytes rounded up to whole values), random content
 * (u8: 0..255, u16: 0..65535, f32: [0,1)); free with tu_img_free. */
ipk_img tu_img_random(int w, int h, int c, ipk_dtype t, int pad_bytes, tu_rng *r);
ipk_img tu_img_zeros(int w, int h, int c, ipk_dtype t, int pad_bytes);
/* 1-channel u8 noise with runs of 0 and 255 (in a fixed pattern), so that window sums reach
 * their extremes. */
ipk_img tu_img_u8_extremes(int w, int h, tu_rng *r);
void tu_img_free(ipk_img *img);
/* Pointer to value (x, y, channel). */
void *tu_px(const ipk_img *img, int x, int y, int ch);
/* Columns x .. x + w - 1 of img, all rows, as an image sharing its pixels (pointer arithmetic only:
 * device images too). */
ipk_img tu_img_view(const ipk_img *img, int x, int w);
double tu_get(const ipk_img *img, int x, int y, int ch);
/* Maximum absolute difference over all pixels and channels (shapes must match). */
double tu_max_diff(const ipk_img *a, const ipk_img *b);
/* A temporary directory made for this test (removed by nobody: it lives under the build dir or /tmp). */
const char *tu_tmpdir(void);
/* Whether two files hold the same bytes (0 when either cannot be read). */
int tu_same_file(const char *a, const char *b);
#endif
