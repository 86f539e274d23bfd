/* CPU benchmark: each OpenMP kernel (all cores) on a 4096x4096 8-bit image, the median of
 * several runs after a warm-up. Prints "key<TAB>ms<TAB>status" lines that bench/run-cpu joins
 * with bench_cpu_opencv.py's; lines starting with '#' are information.
 * Usage: bench_cpu [runs] */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench_common.h"

enum { SIDE = 4096, MAX_RUNS = 100, DEFAULT_RUNS = 7 };

static const int32_t BT601[3] = { 9798, 19235, 3735 };
static const double SHARPEN[9] = { 0, -1, 0, -1, 5, -1, 0, -1, 0 };
static const ipk_entropy_params ENTROPY = { 2, 16, 16, 1.4426950408889634 };   /* base 2 */

typedef enum { OP_GRAY, OP_MEDIAN, OP_MEAN, OP_CONV, OP_HIST, OP_TRANSPOSE, OP_ENTROPY } op_kind;
/* Binomial gaussians, as whole numbers over their sum (the exact integer path) and as the
 * same fractions (the float path), to weigh one against the other. */
static const double GAUSS3[9] = { 1, 2, 1, 2, 4, 2, 1, 2, 1 };
static const double GAUSS3F[9] = { 0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625 };
static double GAUSS5[25], GAUSS5F[25];

typedef struct { const char *key; op_kind kind; int radius; const double *weights; double divisor; } op_spec;

static const op_spec OPS[] = {
    { "median3", OP_MEDIAN, 1, NULL, 0 }, { "median5", OP_MEDIAN, 2, NULL, 0 }, { "median7", OP_MEDIAN, 3, NULL, 0 },
    { "median15", OP_MEDIAN, 7, NULL, 0 }, { "mean3", OP_MEAN, 1, NULL, 0 }, { "mean7", OP_MEAN, 3, NULL, 0 },
    { "conv3", OP_CONV, 1, SHARPEN, 1 }, { "gauss3", OP_CONV, 1, GAUSS3, 16 }, { "gauss3f", OP_CONV, 1, GAUSS3F, 1 },
    { "gauss5", OP_CONV, 2, GAUSS5, 256 }, { "gauss5f", OP_CONV, 2, GAUSS5F, 1 },
    { "hist", OP_HIST, 0, NULL, 0 }, { "entropy5", OP_ENTROPY, 2, NULL, 0 },
    { "gray", OP_GRAY, 0, NULL, 0 }, { "transpose", OP_TRANSPOSE, 0, NULL, 0 },
};

static void init_gauss5(void)
{
    static const double b5[5] = { 1, 4, 6, 4, 1 };
    for (int i = 0; i < 25; i++) {
        GAUSS5[i] = b5[i / 5] * b5[i % 5];
        GAUSS5F[i] = GAUSS5[i] / 256.0;
    }
}

typedef struct { ipk_img gray, rgb, levels16, out, out_f32; uint64_t counts[256]; } images;

static int op_built(op_kind kind)
{
    switch (kind) {
    case OP_GRAY: return ipk_grayscale_cpu != NULL;
    case OP_MEDIAN: return ipk_median_cpu != NULL;
    case OP_MEAN: return ipk_mean_cpu != NULL;
    case OP_CONV: return ipk_convolve_cpu != NULL;
    case OP_HIST: return ipk_histogram_cpu != NULL;
    case OP_TRANSPOSE: return ipk_transpose_cpu != NULL;
    case OP_ENTROPY: return ipk_entropy_cpu != NULL;
    }
    return 0;
}

/* Stage defaults: median replicate, mean and convolve reflect101 (as OpenCV's default). */
static int run_op(const op_spec *op, images *im)
{
    const int k = 2 * op->radius + 1;
    ipk_conv_params conv = { op->weights, k, k, op->divisor, 0.0, IPK_REFLECT101 };
    int64_t bad = 0;
    switch (op->kind) {
    case OP_GRAY: return ipk_grayscale_cpu(&im->rgb, &im->out, BT601, 0);
    case OP_MEDIAN: return ipk_median_cpu(&im->gray, &im->out, op->radius, IPK_REPLICATE, 0);
    case OP_MEAN: return ipk_mean_cpu(&im->gray, &im->out, op->radius, IPK_REFLECT101, 0);
    case OP_CONV: return ipk_convolve_cpu(&im->gray, &im->out, &conv, 0);
    case OP_HIST: return ipk_histogram_cpu(&im->gray, 256, im->counts, 0);
    case OP_TRANSPOSE: return ipk_transpose_cpu(&im->gray, &im->out, 0);
    case OP_ENTROPY: return ipk_entropy_cpu(&im->levels16, &im->out_f32, &ENTROPY, 0, &bad);
    }
    return IPK_EINVAL;
}

static void time_op(const op_spec *op, images *im, int runs)
{
    double t[MAX_RUNS];
    if (!op_built(op->kind)) {
        printf("%s\t-\tnot built\n", op->key);
        return;
    }
    if (run_op(op, im) != IPK_OK) {
        printf("%s\t-\terror\n", op->key);
        return;
    }
    for (int i = 0; i < runs; i++) {
        double t0 = bench_now_ms();
        if (run_op(op, im) != IPK_OK) {
            printf("%s\t-\terror\n", op->key);
            return;
        }
        t[i] = bench_now_ms() - t0;
    }
    printf("%s\t%.3f\tok\n", op->key, bench_median(t, runs));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : DEFAULT_RUNS;
    images im;
    init_gauss5();
    if (runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "bench_cpu: runs must be 1..%d\n", MAX_RUNS);
        return 2;
    }
    if (bench_img_pattern(&im.gray, SIDE, SIDE, 1, 0, 0, 0, 0) || bench_img_pattern(&im.rgb, SIDE, SIDE, 3, 0, 0, 0, 0) ||
        bench_img_pattern(&im.levels16, SIDE, SIDE, 1, 0, 4, 0, 0) ||
        bench_img_zeros(&im.out, SIDE, SIDE, 1, IPK_U8, 0) || bench_img_zeros(&im.out_f32, SIDE, SIDE, 1, IPK_F32, 0)) {
        fprintf(stderr, "bench_cpu: out of memory\n");
        return 1;
    }
    printf("# imgpipe CPU kernels, %dx%d u8, %d OpenMP threads, median of %d runs after 1 warm-up\n", SIDE, SIDE,
           omp_get_max_threads(), runs);
    printf("operation\tms\tstatus\n");
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++) time_op(&OPS[i], &im, runs);
    bench_img_free(&im.gray);
    bench_img_free(&im.rgb);
    bench_img_free(&im.levels16);
    bench_img_free(&im.out);
    bench_img_free(&im.out_f32);
    return 0;
}
