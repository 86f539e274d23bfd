/* GPU benchmark: every imgpipe CUDA kernel against NPP on device-resident 8-bit images,
 * the device-to-device copy as the floor, host<->device copies, and the denoise chain.
 * Usage: bench_gpu [out_dir [runs]]; writes out_dir/bench-gpu.tsv (out_dir: $OUT or "."). */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_common.h"
#include "bench_npp.h"
#include "exec/exec.h"
#include "exec/fuse.h"
#include "plan/pipeline.h"
#include "plan/plan.h"
#include "plan/registry.h"

enum { IMG = 8192, ENT_IMG = 10240, CROP_W = 331, CROP_H = 173, MAX_RUNS = 1000, WARMUP = 5,
       DEFAULT_RUNS = 51, MAX_ROWS = 192, GRAPH_IMG = 1024 };
#define UPLOAD_TARGET_GBS 45.0

static const int32_t BT601[3] = { 9798, 19235, 3735 };

/* OP_ENTROPY_GRAY: entropy.pipe's entropy (radius 2, 256 levels, 16 bins, u8 output) on a gray image, the
 * consumer of the fused rows only. */
typedef enum { OP_GRAY, OP_MEDIAN, OP_MEAN, OP_CONV, OP_HIST, OP_TRANSPOSE, OP_ENTROPY, OP_ENTROPY_GRAY } op_kind;

/* A path value of these rows only: the convolve vec path with another shape (rows a thread), through
 * ipk_convolve_gpu_vec_shape; shape n is VEC_SHAPE(n), n >= 1. */
#define VEC_SHAPE(n) ((ipk_gpu_path)(16 * (n)))

typedef struct {
    const char *name;
    op_kind kind;
    int radius;               /* median, mean, entropy; convolve: a (2r+1)^2 kernel */
    const double *weights;    /* convolve: row-major, divided by `divisor` */
    double divisor;
    double target_ms;         /* from the issue */
    ipk_gpu_path path;        /* median, convolve, mean: AUTO, or a forced implementation (timed alone, no NPP):
                               * median NET its new kernels; convolve and mean VEC the vec kernels (3x3
                               * and 5x5 integer, separable integer up to 7x7, float 3x3), VEC_SHAPE(n)
                               * them with other rows a thread; TILE the kernels before them */
    int variant;              /* 0: what the path runs; median VEC: MEDIAN_VEC_VARIANTS[variant - 1]; mean:
                                 variant - 1 of ipk_mean_gpu_band */
} op_spec;

/* The vec median's instantiations (ipk_median_gpu_vec_variant): rows a thread, blocks per SM,
 * output rows paired; IPK_GPU_VEC runs the one MEDVEC_* in median_vec_block.cuh names (4, 7, 0). */
static const int MEDIAN_VEC_VARIANTS[][3] = { { 2, 8, 0 }, { 2, 10, 0 }, { 4, 7, 0 }, { 6, 6, 0 }, { 2, 6, 1 } };

typedef struct {
    char name[40];
    const char *status;       /* ok, mismatch, not built, error */
    double ms, bytes, pixels, target_ms;
    double npp_ms;            /* < 0: no NPP number, npp_note says why */
    char npp_note[24];
    int is_transfer;
} row;

typedef struct {
    cudaStream_t stream;
    ipk_img rgb, gray, out, out2, ent_src, ent_dst;   /* device images */
    uint32_t *counts;
    int32_t *npp_hist;
    void *scratch;
    size_t scratch_bytes;
    uint8_t *npp_buf;
    size_t npp_buf_bytes;
    float *npp_kernel;
    npp_api npp;
    cudaEvent_t start[MAX_RUNS], stop[MAX_RUNS];
    int runs;
    double copy_gbs;          /* device-to-device rate, bytes read + written */
    row rows[MAX_ROWS + 1];   /* the last: where rows past MAX_ROWS are timed, not printed */
    int n_rows;
    int dropped;              /* rows past MAX_ROWS */
} bench;

static double GAUSS3[9], GAUSS5[25], GAUSS7[49], FLOAT3[9], FLOAT5[25], FLOAT7[49], FLOAT9[81], FGAUSS3[9];
static double RANDOM5[25], RANDOM7[49];
static const double SHARPEN3[9] = { 0, -1, 0, -1, 5, -1, 0, -1, 0 };
/* A 7x7 disk (x^2 + y^2 <= 10, 37 ones): whole numbers that split into no row and column, the
 * convolves fusion still takes. */
static const double DISK7[49] = { 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                  1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0 };
static const ipk_entropy_params ENTROPY = { 2, 16, 16, 1.4426950408889634 };   /* base 2 */
static const ipk_entropy_params ENTROPY_GRAY = { 2, 256, 16, 1.0 };

static const op_spec OPS[] = {
    { "grayscale RGB->gray", OP_GRAY, 0, NULL, 1, 0.12, IPK_GPU_AUTO, 0 },
    { "median 3x3", OP_MEDIAN, 1, NULL, 1, 0.10, IPK_GPU_AUTO, 0 },
    { "median 3x3 (networks: slower, not taken)", OP_MEDIAN, 1, NULL, 1, 0.10, IPK_GPU_NET, 0 },
    { "median 3x3 (packed, before the vec)", OP_MEDIAN, 1, NULL, 1, 0.10, IPK_GPU_TILE, 0 },
    { "median 3x3 (vec path)", OP_MEDIAN, 1, NULL, 1, 0.10, IPK_GPU_VEC, 0 },
    { "median 3x3 (vec 2r x 10b)", OP_MEDIAN, 1, NULL, 1, 0.10, IPK_GPU_VEC, 2 },
    { "median 3x3 (vec 2r x 8b)", OP_MEDIAN, 1, NULL, 1, 0.10, IPK_GPU_VEC, 1 },
    { "median 3x3 (vec 6r x 6b)", OP_MEDIAN, 1, NULL, 1, 0.10, IPK_GPU_VEC, 4 },
    { "median 3x3 (vec 2r x 6b pairs)", OP_MEDIAN, 1, NULL, 1, 0.10, IPK_GPU_VEC, 5 },
    { "median 5x5", OP_MEDIAN, 2, NULL, 1, 0.30, IPK_GPU_AUTO, 0 },
    { "median 5x5 (old kernels)", OP_MEDIAN, 2, NULL, 1, 0.30, IPK_GPU_TILE, 0 },
    { "median 7x7", OP_MEDIAN, 3, NULL, 1, 1.0, IPK_GPU_AUTO, 0 },
    { "median 7x7 (old kernels)", OP_MEDIAN, 3, NULL, 1, 1.0, IPK_GPU_TILE, 0 },
    { "median 15x15", OP_MEDIAN, 7, NULL, 1, 4.0, IPK_GPU_AUTO, 0 },
    { "median 15x15 (old kernels)", OP_MEDIAN, 7, NULL, 1, 4.0, IPK_GPU_TILE, 0 },
    { "median 17x17 (new, no NPP)", OP_MEDIAN, 8, NULL, 1, -1, IPK_GPU_NET, 0 },
    { "median 51x51 (new, no NPP)", OP_MEDIAN, 25, NULL, 1, -1, IPK_GPU_NET, 0 },
    { "mean 3x3", OP_MEAN, 1, NULL, 1, 0.08, IPK_GPU_AUTO, 0 },
    { "mean 3x3 (tile path)", OP_MEAN, 1, NULL, 1, 0.08, IPK_GPU_TILE, 0 },
    { "mean 3x3 (vec path)", OP_MEAN, 1, NULL, 1, 0.08, IPK_GPU_VEC, 0 },
    { "mean 5x5", OP_MEAN, 2, NULL, 1, 0.12, IPK_GPU_AUTO, 0 },
    { "mean 5x5 (tile path)", OP_MEAN, 2, NULL, 1, 0.12, IPK_GPU_TILE, 0 },
    { "mean 5x5 (vec path)", OP_MEAN, 2, NULL, 1, 0.12, IPK_GPU_VEC, 0 },
    { "mean 7x7", OP_MEAN, 3, NULL, 1, 0.12, IPK_GPU_AUTO, 0 },
    { "mean 7x7 (tile path)", OP_MEAN, 3, NULL, 1, 0.12, IPK_GPU_TILE, 0 },
    { "mean 7x7 (vec path)", OP_MEAN, 3, NULL, 1, 0.12, IPK_GPU_VEC, 0 },
    { "mean 31x31", OP_MEAN, 15, NULL, 1, 0.12, IPK_GPU_AUTO, 0 },
    { "mean 31x31 (tile path)", OP_MEAN, 15, NULL, 1, 0.12, IPK_GPU_TILE, 0 },
    { "mean 31x31 (vec path)", OP_MEAN, 15, NULL, 1, 0.12, IPK_GPU_VEC, 0 },
    { "mean 31x31 (band, bands >= 64 rows)", OP_MEAN, 15, NULL, 1, 0.12, IPK_GPU_VEC, 2 },
    { "mean 31x31 (band, bands >= 128 rows)", OP_MEAN, 15, NULL, 1, 0.12, IPK_GPU_VEC, 3 },
    { "mean 15x15", OP_MEAN, 7, NULL, 1, -1, IPK_GPU_AUTO, 0 },
    { "mean 15x15 (vec path)", OP_MEAN, 7, NULL, 1, -1, IPK_GPU_VEC, 0 },
    { "mean 51x51", OP_MEAN, 25, NULL, 1, -1, IPK_GPU_AUTO, 0 },
    { "mean 51x51 (tile path)", OP_MEAN, 25, NULL, 1, -1, IPK_GPU_TILE, 0 },
    { "mean 63x63", OP_MEAN, 31, NULL, 1, -1, IPK_GPU_AUTO, 0 },
    { "convolve float 3x3", OP_CONV, 1, FLOAT3, 1, 0.08, IPK_GPU_AUTO, 0 },
    { "convolve float 3x3 (tile path)", OP_CONV, 1, FLOAT3, 1, 0.08, IPK_GPU_TILE, 0 },
    { "convolve float 3x3 (vec path)", OP_CONV, 1, FLOAT3, 1, 0.08, IPK_GPU_VEC, 0 },
    { "convolve float 3x3 (vec, 10 rows)", OP_CONV, 1, FLOAT3, 1, 0.08, VEC_SHAPE(1), 0 },
    { "convolve float 3x3 (vec, narrow finish)", OP_CONV, 1, FLOAT3, 1, 0.08, VEC_SHAPE(2), 0 },
    { "convolve float 3x3 (vec, narrow, 10 rows)", OP_CONV, 1, FLOAT3, 1, 0.08, VEC_SHAPE(3), 0 },
    { "convolve float 3x3 (vec, narrow, I2F)", OP_CONV, 1, FLOAT3, 1, 0.08, VEC_SHAPE(4), 0 },
    { "convolve float 3x3 (vec, narrow, HALF)", OP_CONV, 1, FLOAT3, 1, 0.08, VEC_SHAPE(5), 0 },
    { "convolve float 3x3 (vec, narrow, HALF, 10 rows)", OP_CONV, 1, FLOAT3, 1, 0.08, VEC_SHAPE(6), 0 },
    { "convolve float gaussian3", OP_CONV, 1, FGAUSS3, 1, 0.08, IPK_GPU_AUTO, 0 },
    { "convolve float gaussian3 (vec path)", OP_CONV, 1, FGAUSS3, 1, 0.08, IPK_GPU_VEC, 0 },
    { "convolve float 5x5", OP_CONV, 2, FLOAT5, 1, 0.10, IPK_GPU_AUTO, 0 },
    { "convolve float 5x5 (tile path)", OP_CONV, 2, FLOAT5, 1, 0.10, IPK_GPU_TILE, 0 },
    { "convolve float 5x5 (FMA certified)", OP_CONV, 2, FLOAT5, 1, 0.10, VEC_SHAPE(7), 0 },
    { "convolve float 5x5 (tc, other limbs)", OP_CONV, 2, FLOAT5, 1, 0.10, VEC_SHAPE(8), 0 },
    { "convolve float 5x5 (random weights)", OP_CONV, 2, RANDOM5, 1, 0.10, IPK_GPU_AUTO, 0 },
    { "convolve float 7x7", OP_CONV, 3, FLOAT7, 1, 0.15, IPK_GPU_AUTO, 0 },
    { "convolve float 7x7 (tile path)", OP_CONV, 3, FLOAT7, 1, 0.15, IPK_GPU_TILE, 0 },
    { "convolve float 7x7 (FMA certified)", OP_CONV, 3, FLOAT7, 1, 0.15, VEC_SHAPE(7), 0 },
    { "convolve float 7x7 (tc, other limbs)", OP_CONV, 3, FLOAT7, 1, 0.15, VEC_SHAPE(8), 0 },
    { "convolve float 7x7 (random weights)", OP_CONV, 3, RANDOM7, 1, 0.15, IPK_GPU_AUTO, 0 },
    { "convolve float 9x9 (no target)", OP_CONV, 4, FLOAT9, 1, -1, IPK_GPU_AUTO, 0 },
    { "convolve float 9x9 (tile path)", OP_CONV, 4, FLOAT9, 1, -1, IPK_GPU_TILE, 0 },
    { "convolve gaussian3", OP_CONV, 1, GAUSS3, 16, 0.08, IPK_GPU_AUTO, 0 },
    { "convolve gaussian3 (tile path)", OP_CONV, 1, GAUSS3, 16, 0.08, IPK_GPU_TILE, 0 },
    { "convolve gaussian3 (vec path)", OP_CONV, 1, GAUSS3, 16, 0.08, IPK_GPU_VEC, 0 },
    { "convolve gaussian5", OP_CONV, 2, GAUSS5, 256, 0.10, IPK_GPU_AUTO, 0 },
    { "convolve gaussian5 (tile path)", OP_CONV, 2, GAUSS5, 256, 0.10, IPK_GPU_TILE, 0 },
    { "convolve gaussian5 (vec path)", OP_CONV, 2, GAUSS5, 256, 0.10, IPK_GPU_VEC, 0 },
    { "convolve gaussian7", OP_CONV, 3, GAUSS7, 4096, 0.15, IPK_GPU_AUTO, 0 },
    { "convolve gaussian7 (tile path)", OP_CONV, 3, GAUSS7, 4096, 0.15, IPK_GPU_TILE, 0 },
    { "convolve gaussian7 (vec path)", OP_CONV, 3, GAUSS7, 4096, 0.15, IPK_GPU_VEC, 0 },
    { "convolve gaussian7 (vec, 4 rows)", OP_CONV, 3, GAUSS7, 4096, 0.15, VEC_SHAPE(1), 0 },
    { "convolve sharpen3", OP_CONV, 1, SHARPEN3, 1, 0.08, IPK_GPU_AUTO, 0 },
    { "convolve sharpen3 (tile path)", OP_CONV, 1, SHARPEN3, 1, 0.08, IPK_GPU_TILE, 0 },
    { "convolve sharpen3 (vec path)", OP_CONV, 1, SHARPEN3, 1, 0.08, IPK_GPU_VEC, 0 },
    { "convolve disk7 (no target)", OP_CONV, 3, DISK7, 37, -1, IPK_GPU_AUTO, 0 },
    { "histogram 256", OP_HIST, 0, NULL, 1, 0.035, IPK_GPU_AUTO, 0 },
    { "transpose", OP_TRANSPOSE, 0, NULL, 1, 0.07, IPK_GPU_AUTO, 0 },
    { "entropy 5x5 16 lv 16 bins", OP_ENTROPY, 2, NULL, 1, 0.6, IPK_GPU_AUTO, 0 },
};
#define N_OPS ((int)(sizeof OPS / sizeof *OPS))

static void die(const char *what, cudaError_t e)
{
    fprintf(stderr, "bench_gpu: %s: %s\n", what, cudaGetErrorString(e));
    exit(1);
}

/* Non-fatal check: prints the failing call once and tells the caller to mark the row. */
static int cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 1;
    fprintf(stderr, "bench_gpu: %s: %s\n", what, cudaGetErrorString(e));
    return 0;
}
#define CK(call) cuda_ok((call), #call)
#define CK_FATAL(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) die(#call, e_); } while (0)

/* Binomial rows give the gaussians; the float kernels are deliberately not separable, but for
 * FGAUSS3, gaussian3 with its weights divided by 16 (the float path's separable case). */
static void init_kernels(void)
{
    static const double b3[3] = { 1, 2, 1 }, b5[5] = { 1, 4, 6, 4, 1 }, b7[7] = { 1, 6, 15, 20, 15, 6, 1 };
    for (int i = 0; i < 9; i++) GAUSS3[i] = b3[i / 3] * b3[i % 3];
    for (int i = 0; i < 9; i++) FGAUSS3[i] = GAUSS3[i] / 16.0;
    for (int i = 0; i < 25; i++) GAUSS5[i] = b5[i / 5] * b5[i % 5];
    for (int i = 0; i < 49; i++) GAUSS7[i] = b7[i / 7] * b7[i % 7];
    double *floats[4] = { FLOAT3, FLOAT5, FLOAT7, FLOAT9 };
    for (int k = 0; k < 4; k++) {
        int n = (2 * k + 3) * (2 * k + 3);
        double sum = 0;
        for (int i = 0; i < n; i++) sum += floats[k][i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
        for (int i = 0; i < n; i++) floats[k][i] /= sum;
    }
    /* Weights with all 24 bits of a float, no common step: the certified kernels' hardest case
     * (convolve_tc.h's scale search gains little on them), next to the decimal FLOAT kernels. */
    double *randoms[2] = { RANDOM5, RANDOM7 };
    uint32_t state = 12345u;
    for (int k = 0; k < 2; k++) {
        int n = (2 * k + 5) * (2 * k + 5);
        double sum = 0;
        for (int i = 0; i < n; i++) {
            state = state * 1664525u + 1013904223u;
            sum += randoms[k][i] = (double)(float)((double)(state >> 8) / 16777216.0 - 0.3);
        }
        for (int i = 0; i < n; i++) randoms[k][i] /= sum;
    }
}

static int in_channels(const op_spec *op) { return op->kind == OP_GRAY ? 3 : 1; }

static ipk_dtype out_dtype(const op_spec *op) { return op->kind == OP_ENTROPY ? IPK_F32 : IPK_U8; }
static int ksize(const op_spec *op) { return 2 * op->radius + 1; }

static ipk_conv_params conv_params(const op_spec *op)
{
    ipk_conv_params p = { op->weights, ksize(op), ksize(op), op->divisor, 0.0, IPK_REFLECT101 };
    return p;
}

static int gpu_op_built(const op_spec *op)
{
    switch (op->kind) {
    case OP_GRAY: return ipk_grayscale_gpu != NULL;
    case OP_MEDIAN:
        return ipk_median_gpu_path && ipk_median_gpu_scratch && (!op->variant || ipk_median_gpu_vec_variant);
    case OP_MEAN: return ipk_mean_gpu_path && ipk_mean_gpu_scratch && (!op->variant || ipk_mean_gpu_band);
    case OP_CONV:
        return ipk_convolve_gpu_path && ipk_convolve_gpu_scratch && (op->path < VEC_SHAPE(1) || ipk_convolve_gpu_vec_shape);
    case OP_HIST: return ipk_histogram_gpu != NULL;
    case OP_TRANSPOSE: return ipk_transpose_gpu != NULL;
    case OP_ENTROPY:
    case OP_ENTROPY_GRAY: return ipk_entropy_gpu && ipk_entropy_gpu_scratch;
    }
    return 0;
}

static int cpu_op_built(const op_spec *op)
{
    switch (op->kind) {
    case OP_GRAY: return ipk_grayscale_cpu != NULL;
    case OP_MEDIAN: return ipk_median_cpu != NULL;
    case OP_MEAN: return ipk_mean_cpu != NULL;
    case OP_CONV: return ipk_convolve_cpu != NULL;
    case OP_HIST: return ipk_histogram_cpu != NULL;
    case OP_TRANSPOSE: return ipk_transpose_cpu != NULL;
    case OP_ENTROPY:
    case OP_ENTROPY_GRAY: return ipk_entropy_cpu != NULL;
    }
    return 0;
}

static size_t gpu_scratch(const op_spec *op, int w, int h)
{
    if (!gpu_op_built(op)) return 0;
    switch (op->kind) {
    case OP_MEDIAN: return ipk_median_gpu_scratch(w, h, 1, IPK_U8, op->radius);
    case OP_MEAN: return ipk_mean_gpu_scratch(w, h, 1, IPK_U8, op->radius);
    case OP_CONV: return ipk_convolve_gpu_scratch(w, h, 1, IPK_U8, ksize(op), ksize(op));
    case OP_ENTROPY: return ipk_entropy_gpu_scratch(w, h, &ENTROPY);
    case OP_ENTROPY_GRAY: return ipk_entropy_gpu_scratch(w, h, &ENTROPY_GRAY);
    default: return 0;
    }
}

static int run_gpu_op(const op_spec *op, const ipk_img *src, const ipk_img *dst, uint32_t *counts,
                      void *scratch, size_t scratch_bytes, void *stream)
{
    ipk_conv_params p = conv_params(op);
    switch (op->kind) {
    case OP_GRAY: return ipk_grayscale_gpu(src, dst, BT601, stream);
    case OP_MEDIAN:
        if (op->variant > 0) {
            const int *v = MEDIAN_VEC_VARIANTS[op->variant - 1];
            return ipk_median_gpu_vec_variant(src, dst, IPK_REPLICATE, v[0], v[1], v[2], stream);
        }
        return ipk_median_gpu_path(src, dst, op->radius, IPK_REPLICATE, scratch, scratch_bytes, stream, op->path);
    case OP_MEAN:
        if (op->variant > 0)
            return ipk_mean_gpu_band(src, dst, op->radius, IPK_REFLECT101, stream, op->variant - 1);
        return ipk_mean_gpu_path(src, dst, op->radius, IPK_REFLECT101, scratch, scratch_bytes, stream, op->path);
    case OP_CONV:
        if (op->path >= VEC_SHAPE(1))
            return ipk_convolve_gpu_vec_shape(src, dst, &p, stream, (int)op->path / VEC_SHAPE(1));
        return ipk_convolve_gpu_path(src, dst, &p, scratch, scratch_bytes, stream, op->path);
    case OP_HIST: return ipk_histogram_gpu(src, 256, counts, stream);
    case OP_TRANSPOSE: return ipk_transpose_gpu(src, dst, stream);
    case OP_ENTROPY: return ipk_entropy_gpu(src, dst, &ENTROPY, scratch, scratch_bytes, stream);
    case OP_ENTROPY_GRAY: return ipk_entropy_gpu(src, dst, &ENTROPY_GRAY, scratch, scratch_bytes, stream);
    }
    return IPK_EINVAL;
}

static int run_cpu_op(const op_spec *op, const ipk_img *src, const ipk_img *dst, uint64_t *counts)
{
    ipk_conv_params p = conv_params(op);
    int64_t bad = 0;
    switch (op->kind) {
    case OP_GRAY: return ipk_grayscale_cpu(src, dst, BT601, 0);
    case OP_MEDIAN: return ipk_median_cpu(src, dst, op->radius, IPK_REPLICATE, 0);
    case OP_MEAN: return ipk_mean_cpu(src, dst, op->radius, IPK_REFLECT101, 0);
    case OP_CONV: return ipk_convolve_cpu(src, dst, &p, 0);
    case OP_HIST: return ipk_histogram_cpu(src, 256, counts, 0);
    case OP_TRANSPOSE: return ipk_transpose_cpu(src, dst, 0);
    case OP_ENTROPY: return ipk_entropy_cpu(src, dst, &ENTROPY, 0, &bad);
    case OP_ENTROPY_GRAY: return ipk_entropy_cpu(src, dst, &ENTROPY_GRAY, 0, &bad);
    }
    return IPK_EINVAL;
}

static int dev_img(ipk_img *img, int w, int h, int c, ipk_dtype t)
{
    size_t px = (t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4) * (size_t)c, pitch = 0;
    memset(img, 0, sizeof *img);
    if (!CK(cudaMallocPitch(&img->data, &pitch, (size_t)w * px, (size_t)h))) return -1;
    img->stride = (ptrdiff_t)pitch;
    img->width = w;
    img->height = h;
    img->channels = c;
    img->dtype = t;
    return 0;
}

static size_t row_bytes(const ipk_img *img)
{
    return (size_t)img->width * (size_t)img->channels * (img->dtype == IPK_U8 ? 1 : img->dtype == IPK_U16 ? 2 : 4);
}

static int copy_img(const ipk_img *dst, const ipk_img *src, enum cudaMemcpyKind kind)
{
    return CK(cudaMemcpy2D(dst->data, (size_t)dst->stride, src->data, (size_t)src->stride, row_bytes(src),
                           (size_t)src->height, kind)) ? 0 : -1;
}

static int same_values(const ipk_img *a, const ipk_img *b)
{
    for (int y = 0; y < a->height; y++) {
        const char *ra = (const char *)a->data + (ptrdiff_t)y * a->stride;
        const char *rb = (const char *)b->data + (ptrdiff_t)y * b->stride;
        if (a->dtype != IPK_F32) {
            if (memcmp(ra, rb, row_bytes(a)) != 0) return 0;
            continue;
        }
        for (int x = 0; x < a->width; x++) {
            float fa, fb;
            memcpy(&fa, ra + 4 * (size_t)x, 4);
            memcpy(&fb, rb + 4 * (size_t)x, 4);
            if (!(fabsf(fa - fb) <= 1e-5f * fmaxf(1.0f, fabsf(fb)))) return 0;
        }
    }
    return 1;
}

/* Runs the GPU kernel and the CPU kernel on a small odd-sized crop with padded strides and
 * compares; the device output is poisoned first so an unwritten pixel shows. */
static const char *verify(bench *b, const op_spec *op)
{
    if (!gpu_op_built(op) || !cpu_op_built(op)) return "not built";
    int ow = op->kind == OP_TRANSPOSE ? CROP_H : CROP_W, oh = op->kind == OP_TRANSPOSE ? CROP_W : CROP_H;
    ipk_img h_src, h_cpu, h_gpu, d_src, d_dst;
    const char *verdict = "error";
    uint64_t cpu_counts[256] = { 0 };
    uint32_t gpu_counts[256] = { 0 };
    size_t scratch_bytes = gpu_scratch(op, CROP_W, CROP_H);
    void *scratch = NULL;
    if (bench_img_pattern(&h_src, CROP_W, CROP_H, in_channels(op), 13, op->kind == OP_ENTROPY ? 4 : 0, 1000, 2000) ||
        bench_img_zeros(&h_cpu, ow, oh, 1, out_dtype(op), 7) || bench_img_zeros(&h_gpu, ow, oh, 1, out_dtype(op), 7)) {
        fprintf(stderr, "bench_gpu: out of host memory\n");
        exit(1);
    }
    if (dev_img(&d_src, CROP_W, CROP_H, in_channels(op), IPK_U8) || dev_img(&d_dst, ow, oh, 1, out_dtype(op)))
        return verdict;
    if (scratch_bytes && !CK(cudaMalloc(&scratch, scratch_bytes))) goto done;
    if (copy_img(&d_src, &h_src, cudaMemcpyHostToDevice) ||
        !CK(cudaMemset2D(d_dst.data, (size_t)d_dst.stride, 0xA5, row_bytes(&d_dst), (size_t)oh)))
        goto done;
    if (run_gpu_op(op, &d_src, &d_dst, b->counts, scratch, scratch_bytes, b->stream) != IPK_OK ||
        !CK(cudaStreamSynchronize(b->stream)) || copy_img(&h_gpu, &d_dst, cudaMemcpyDeviceToHost) ||
        !CK(cudaMemcpy(gpu_counts, b->counts, sizeof gpu_counts, cudaMemcpyDeviceToHost)))
        goto done;
    if (run_cpu_op(op, &h_src, &h_cpu, cpu_counts) != IPK_OK) goto done;
    verdict = "ok";
    if (op->kind == OP_HIST) {
        for (int i = 0; i < 256; i++)
            if (gpu_counts[i] != cpu_counts[i]) verdict = "mismatch";
    } else if (!same_values(&h_gpu, &h_cpu)) {
        verdict = "mismatch";
    }
done:
    cudaFree(scratch);
    cudaFree(d_src.data);
    cudaFree(d_dst.data);
    bench_img_free(&h_src);
    bench_img_free(&h_cpu);
    bench_img_free(&h_gpu);
    return verdict;
}

typedef int (*enqueue_fn)(bench *b, const void *arg);

/* Median of b->runs single launches, each between two events, after a warm-up. */
static int time_median(bench *b, enqueue_fn fn, const void *arg, double *ms)
{
    double t[MAX_RUNS];
    for (int i = 0; i < WARMUP; i++)
        if (fn(b, arg) != 0) return -1;
    if (!CK(cudaStreamSynchronize(b->stream))) return -1;
    for (int i = 0; i < b->runs; i++) {
        if (!CK(cudaEventRecord(b->start[i], b->stream)) || fn(b, arg) != 0 ||
            !CK(cudaEventRecord(b->stop[i], b->stream)))
            return -1;
    }
    if (!CK(cudaStreamSynchronize(b->stream))) return -1;
    for (int i = 0; i < b->runs; i++) {
        float f = 0;
        if (!CK(cudaEventElapsedTime(&f, b->start[i], b->stop[i]))) return -1;
        t[i] = f;
    }
    *ms = bench_median(t, b->runs);
    return 0;
}

typedef struct { const op_spec *op; const ipk_img *src, *dst; } ipk_call;

static int enqueue_ipk(bench *b, const void *arg)
{
    const ipk_call *c = arg;
    return run_gpu_op(c->op, c->src, c->dst, b->counts, b->scratch, b->scratch_bytes, b->stream) == IPK_OK ? 0 : -1;
}

typedef struct { void *dst; const void *src; size_t bytes; enum cudaMemcpyKind kind; } copy_call;

static int enqueue_copy(bench *b, const void *arg)
{
    const copy_call *c = arg;
    return CK(cudaMemcpyAsync(c->dst, c->src, c->bytes, c->kind, b->stream)) ? 0 : -1;
}

static npp_size full_size(void) { npp_size s = { IMG, IMG }; return s; }

/* NPP's median has no border handling: it runs on the interior, the image less r each side. */
static int enqueue_npp(bench *b, const void *arg)
{
    const op_spec *op = arg;
    const npp_api *n = &b->npp;
    const uint8_t *src = b->gray.data;
    uint8_t *dst = b->out.data;
    int step = (int)b->gray.stride, k = ksize(op), r = op->radius;
    npp_size mask = { k, k }, inner = { IMG - 2 * r, IMG - 2 * r };
    npp_point anchor = { r, r }, origin = { 0, 0 };
    int st = -1;
    switch (op->kind) {
    case OP_GRAY:
        st = n->rgb_to_gray(b->rgb.data, (int)b->rgb.stride, dst, (int)b->out.stride, full_size(), n->ctx);
        break;
    case OP_MEDIAN:
        st = n->median(src + (ptrdiff_t)r * step + r, step, dst + (ptrdiff_t)r * b->out.stride + r,
                       (int)b->out.stride, inner, mask, anchor, b->npp_buf, n->ctx);
        break;
    case OP_MEAN:
        st = n->box(src, step, full_size(), origin, dst, (int)b->out.stride, full_size(), mask, anchor,
                    NPP_BORDER_REPLICATE, n->ctx);
        break;
    case OP_CONV:
        st = n->filter32f(src, step, full_size(), origin, dst, (int)b->out.stride, full_size(), b->npp_kernel,
                          mask, anchor, NPP_BORDER_REPLICATE, n->ctx);
        break;
    case OP_HIST:
        st = n->histogram_even(src, step, full_size(), b->npp_hist, 257, 0, 256, b->npp_buf, n->ctx);
        break;
    case OP_TRANSPOSE:
        st = n->transpose(src, step, dst, (int)b->out.stride, full_size(), n->ctx);
        break;
    case OP_ENTROPY:
    case OP_ENTROPY_GRAY:
        break;
    }
    return st < 0 ? -1 : 0;
}

static int npp_has(const npp_api *n, const op_spec *op)
{
    switch (op->kind) {
    case OP_GRAY: return n->rgb_to_gray != NULL;
    case OP_MEDIAN: return n->median && n->median_buffer_size;
    case OP_MEAN: return n->box != NULL;
    case OP_CONV: return n->filter32f != NULL;
    case OP_HIST: return n->histogram_even && n->histogram_buffer_size;
    case OP_TRANSPOSE: return n->transpose != NULL;
    case OP_ENTROPY:
    case OP_ENTROPY_GRAY: return 0;
    }
    return 0;
}

static int ensure_npp_buffer(bench *b, size_t bytes)
{
    if (bytes <= b->npp_buf_bytes) return 0;
    cudaFree(b->npp_buf);
    b->npp_buf = NULL;
    b->npp_buf_bytes = 0;
    if (!CK(cudaMalloc((void **)&b->npp_buf, bytes))) return -1;
    b->npp_buf_bytes = bytes;
    return 0;
}

/* Work buffer and kernel coefficients outside the timed region. NPP's float filter takes
 * its coefficients in reverse order (a true convolution), so they are flipped. */
static int prepare_npp(bench *b, const op_spec *op)
{
    uint64_t bytes = 0;
    npp_size mask = { ksize(op), ksize(op) }, inner = { IMG - 2 * op->radius, IMG - 2 * op->radius };
    if (op->kind == OP_MEDIAN) {
        if (b->npp.median_buffer_size(inner, mask, &bytes, b->npp.ctx) < 0) return -1;
        return ensure_npp_buffer(b, (size_t)bytes);
    }
    if (op->kind == OP_HIST) {
        if (b->npp.histogram_buffer_size(full_size(), 257, &bytes, b->npp.ctx) < 0) return -1;
        return ensure_npp_buffer(b, (size_t)bytes);
    }
    if (op->kind == OP_CONV) {
        float k[81];
        int n = mask.width * mask.height;
        for (int i = 0; i < n; i++) k[n - 1 - i] = (float)(op->weights[i] / op->divisor);
        return CK(cudaMemcpy(b->npp_kernel, k, (size_t)n * sizeof *k, cudaMemcpyHostToDevice)) ? 0 : -1;
    }
    return 0;
}

static row *add_row(bench *b, const char *name, double bytes, double pixels, double target_ms)
{
    row *r = &b->rows[b->n_rows < MAX_ROWS ? b->n_rows++ : MAX_ROWS];
    if (r == &b->rows[MAX_ROWS]) b->dropped++;
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->status = "ok";
    r->bytes = bytes;
    r->pixels = pixels;
    r->target_ms = target_ms;
    r->ms = -1;
    r->npp_ms = -1;
    snprintf(r->npp_note, sizeof r->npp_note, "-");
    return r;
}

static void time_npp(bench *b, const op_spec *op, row *r)
{
    if (op->path != IPK_GPU_AUTO) {
        snprintf(r->npp_note, sizeof r->npp_note, "%s", op->path == IPK_GPU_NET ? "not timed" : "as the row above");
        return;
    }
    if (op->kind == OP_ENTROPY) {
        snprintf(r->npp_note, sizeof r->npp_note, "no NPP peer");
        return;
    }
    if (!npp_has(&b->npp, op)) {
        snprintf(r->npp_note, sizeof r->npp_note, "NPP: not found");
        return;
    }
    if (prepare_npp(b, op) != 0 || time_median(b, enqueue_npp, op, &r->npp_ms) != 0) {
        r->npp_ms = -1;
        snprintf(r->npp_note, sizeof r->npp_note, "NPP error");
    }
}

static void bench_op(bench *b, const op_spec *op)
{
    const ipk_img *src = op->kind == OP_GRAY ? &b->rgb : op->kind == OP_ENTROPY ? &b->ent_src : &b->gray;
    const ipk_img *dst = op->kind == OP_ENTROPY ? &b->ent_dst : &b->out;
    double px = (double)src->width * src->height;
    double out_bytes = op->kind == OP_HIST ? 0 : px * (op->kind == OP_ENTROPY ? 4 : 1);
    row *r = add_row(b, op->name, px * in_channels(op) + out_bytes, px, op->target_ms);
    r->status = verify(b, op);
    if (strcmp(r->status, "ok") == 0) {
        ipk_call call = { op, src, dst };
        if (time_median(b, enqueue_ipk, &call, &r->ms) != 0) r->status = "error";
    }
    time_npp(b, op, r);
}

static double find_ms(const bench *b, const char *name)
{
    for (int i = 0; i < b->n_rows; i++)
        if (strcmp(b->rows[i].name, name) == 0 && strcmp(b->rows[i].status, "ok") == 0) return b->rows[i].ms;
    return -1;
}

/* denoise.pipe as three kernels back to back on one stream, through two device buffers. */
static int enqueue_denoise(bench *b, const void *arg)
{
    const op_spec *stage = arg;   /* grayscale, median 3x3, gaussian3 */
    if (run_gpu_op(&stage[0], &b->rgb, &b->out, NULL, b->scratch, b->scratch_bytes, b->stream) != IPK_OK ||
        run_gpu_op(&stage[1], &b->out, &b->out2, NULL, b->scratch, b->scratch_bytes, b->stream) != IPK_OK ||
        run_gpu_op(&stage[2], &b->out2, &b->out, NULL, b->scratch, b->scratch_bytes, b->stream) != IPK_OK)
        return -1;
    return 0;
}

/* Consumers of the fused rows that are not timed on their own in OPS. */
static const op_spec FUSED_ONLY_OPS[] = {
    { "entropy 5x5 u8 (entropy.pipe)", OP_ENTROPY_GRAY, 2, NULL, 1, -1, IPK_GPU_AUTO, 0 },
};

static const op_spec *find_op(const char *name)
{
    for (int i = 0; i < N_OPS; i++)
        if (strcmp(OPS[i].name, name) == 0) return &OPS[i];
    for (size_t i = 0; i < sizeof FUSED_ONLY_OPS / sizeof *FUSED_ONLY_OPS; i++)
        if (strcmp(FUSED_ONLY_OPS[i].name, name) == 0) return &FUSED_ONLY_OPS[i];
    return NULL;
}

static void bench_denoise(bench *b)
{
    const op_spec stages[3] = { *find_op("grayscale RGB->gray"), *find_op("median 3x3"),
                                *find_op("convolve gaussian3") };
    double alone = 0;
    for (int i = 0; i < 3; i++) {
        double ms = find_ms(b, stages[i].name);
        alone = ms < 0 || alone < 0 ? -1 : alone + ms;
    }
    double px = (double)IMG * IMG;
    /* The target: the chain within 5% of its kernels timed alone. */
    row *r = add_row(b, "denoise chain (3 kernels)", px * (4 + 2 + 2), px, alone < 0 ? -1 : alone * 1.05);
    snprintf(r->npp_note, sizeof r->npp_note, "sum alone %.4f", alone);
    if (alone < 0) {
        r->status = "not built";
        return;
    }
    if (time_median(b, enqueue_denoise, stages, &r->ms) != 0) r->status = "error";
}

/* Run-time fusion and graphs go through the core (plans, NVRTC, the executor): the plugins come
 * from IMGPIPE_BENCH_PLUGINS or the build's folder, the pipeline from the source tree. */
#ifndef IMGPIPE_BENCH_PLUGINS
#define IMGPIPE_BENCH_PLUGINS "build/lib/imgpipe/plugins"
#endif
#ifndef IMGPIPE_BENCH_SOURCE
#define IMGPIPE_BENCH_SOURCE "."
#endif

static int bench_plan(const registry *reg, const pl_pipeline *pl, const ip_shape *shape, plan *p)
{
    char err[1024];
    ip_shape final;
    int rc = plan_build(reg, pl, p, err, sizeof err);
    if (rc == IP_OK && (rc = plan_shapes(p, shape, &final, err, sizeof err)) != IP_OK) plan_free(p);
    if (rc != IP_OK) fprintf(stderr, "bench_gpu: %s\n", err);
    return rc;
}

typedef struct { const fuser *f; const fuse_kernel *k; const fuse_group *g; const ipk_img *src, *dst; } fused_call;

static int enqueue_fused(bench *b, const void *arg)
{
    const fused_call *c = arg;
    char err[256];
    if (c->g->kind == FUSE_HISTOGRAM)   /* zeroed as ipk_histogram_gpu zeroes its counts */
        return CK(cudaMemsetAsync(b->counts, 0, 256 * sizeof *b->counts, b->stream)) &&
               fuser_launch_counts(c->f, c->k, c->g, c->src->data, c->src->stride, c->dst->data, c->dst->stride,
                                   c->src->width, c->src->height, b->counts, b->stream, err, sizeof err) == IP_OK ? 0 : -1;
    return fuser_launch(c->f, c->k, c->g, c->src->data, c->src->stride, c->dst->data, c->dst->stride, c->src->width,
                        c->src->height, b->stream, err, sizeof err) == IP_OK ? 0 : -1;
}

/* Grayscale then the consumer (stage[1]) through b->out2, as the unfused chain runs. */
static int enqueue_gray_consumer(bench *b, const void *arg)
{
    const op_spec *stage = arg;
    return run_gpu_op(&stage[0], &b->rgb, &b->out2, NULL, b->scratch, b->scratch_bytes, b->stream) == IPK_OK &&
           run_gpu_op(&stage[1], &b->out2, &b->out, b->counts, b->scratch, b->scratch_bytes, b->stream) == IPK_OK ? 0 : -1;
}

/* The fused kernel's output against grayscale then the consumer (b->out after enqueue_gray_consumer);
 * for a histogram, the image it passes on (the gray one, b->out2 unfused) and the counts. */
static const char *check_fused(bench *b, const fused_call *c, const op_spec *stages)
{
    const int counts = c->g->kind == FUSE_HISTOGRAM;
    const ipk_img *want_img = counts ? &b->out2 : &b->out;
    size_t bytes = (size_t)b->out.stride * IMG;
    uint8_t *want = malloc(bytes), *got = malloc(bytes);
    uint32_t want_counts[256] = { 0 }, got_counts[256] = { 0 };
    const char *verdict = "error";
    /* b->out poisoned differently before each run, so an unwritten pixel shows; rows compared packed */
    if (want && got && CK(cudaMemset(b->out.data, 0xA5, bytes)) && enqueue_gray_consumer(b, stages) == 0 &&
        CK(cudaStreamSynchronize(b->stream)) &&
        CK(cudaMemcpy2D(want, IMG, want_img->data, (size_t)want_img->stride, IMG, IMG, cudaMemcpyDeviceToHost)) &&
        CK(cudaMemcpy(want_counts, b->counts, sizeof want_counts, cudaMemcpyDeviceToHost)) &&
        CK(cudaMemset(b->out.data, 0x5A, bytes)) && enqueue_fused(b, c) == 0 && CK(cudaStreamSynchronize(b->stream)) &&
        CK(cudaMemcpy2D(got, IMG, b->out.data, (size_t)b->out.stride, IMG, IMG, cudaMemcpyDeviceToHost)) &&
        CK(cudaMemcpy(got_counts, b->counts, sizeof got_counts, cudaMemcpyDeviceToHost)))
        verdict = memcmp(want, got, (size_t)IMG * IMG) == 0 && (!counts || memcmp(want_counts, got_counts, sizeof got_counts) == 0)
                      ? "ok" : "mismatch";
    free(want);
    free(got);
    return verdict;
}

typedef struct {
    const char *consumer;     /* the op after grayscale, as named in OPS */
    const char *text;         /* the same chain as a pipeline */
    const char *alone, *unfused, *fused;   /* row names */
} fused_case;

static const fused_case FUSED_CASES[] = {
    { "median 3x3", "grayscale | median radius=1", "median3 gray", "grayscale->median3 unfused",
      "grayscale+median3 fused" },
    /* The stages' defaults are the ops' borders (reflect101) and gaussian3's divisor (16). */
    { "mean 3x3", "grayscale | mean radius=1", "mean 3x3 gray", "grayscale->mean 3x3 unfused",
      "grayscale->mean 3x3 fused" },
    { "mean 31x31", "grayscale | mean radius=15", "mean 31x31 gray", "grayscale->mean 31x31 unfused",
      "grayscale->mean 31x31 fused" },
    /* The 7x7 binomial (the ops' gaussian7) fused 0.283 ms against 0.251 apart on the H100, so
     * separable kernels are no longer fused: this row now says "not fused" (3x3 and 5x5 run on
     * the vec kernel, faster apart) */
    { "convolve gaussian7", "grayscale | convolve divisor=4096 kernel=\"1 6 15 20 15 6 1; 6 36 90 120 90 36 6; 15 90 225 300 225 90 15; 20 120 300 400 300 120 20; 15 90 225 300 225 90 15; 6 36 90 120 90 36 6; 1 6 15 20 15 6 1\"",
      "convolve gaussian7 gray", "grayscale->convolve gaussian7 unfused", "grayscale->convolve gaussian7 fused" },
    { "convolve disk7 (no target)", "grayscale | convolve divisor=37 kernel=\"0 0 1 1 1 0 0; 0 1 1 1 1 1 0; 1 1 1 1 1 1 1; 1 1 1 1 1 1 1; 1 1 1 1 1 1 1; 0 1 1 1 1 1 0; 0 0 1 1 1 0 0\"",
      "convolve disk7 gray", "grayscale->convolve disk7 unfused", "grayscale->convolve disk7 fused" },
    { "entropy 5x5 u8 (entropy.pipe)", "grayscale | entropy radius=2 bins=16 output=u8", "entropy gray",
      "grayscale->entropy unfused", "grayscale->entropy fused" },
    { "histogram 256", "grayscale | histogram bins=256", "histogram gray", "grayscale->histogram unfused",
      "grayscale->histogram fused" },
};

/* text planned on an RGB image and its fused kernel: 0; -1 no plugins; 1 fusion cannot run (no
 * NVRTC); 2 the chain does not fuse. */
static int fused_kernel_for(const registry *reg, const char *text, plan *p, fuser **f, fuse_group *g, fuse_kernel *k)
{
    pl_pipeline pl;
    char err[1024];
    ip_shape shape = { IMG, IMG, 3, IP_U8 };
    if (pl_parse(text, "bench", &pl, err, sizeof err) != IP_OK) return -1;
    int rc = bench_plan(reg, &pl, &shape, p);
    pl_free(&pl);
    if (rc != IP_OK) return -1;
    *g = fuse_group_at(p, 0);
    if (g->kind == FUSE_NONE) {
        fprintf(stderr, "bench_gpu: fusion: '%s' does not fuse\n", text);
        return 2;
    }
    if (fuser_create(f, 0, err, sizeof err) != IP_OK || fuser_prepare(*f, p, g, k, err, sizeof err) != IP_OK) {
        fprintf(stderr, "bench_gpu: fusion: %s\n", err);
        return 1;
    }
    printf("fused %s: %s\n", text, k->compiled ? "compiled now" : k->from_disk ? "from the disk cache" : "in memory");
    return 0;
}

/* The consumer alone on a gray image, grayscale then the consumer as two kernels, and the fused kernel. */
static void bench_fused(bench *b, const registry *reg, const fused_case *fc)
{
    const op_spec stages[2] = { *find_op("grayscale RGB->gray"), *find_op(fc->consumer) };
    const int counts = stages[1].kind == OP_HIST;   /* reads its input and writes no image */
    double px = (double)IMG * IMG;
    row *alone = add_row(b, fc->alone, (counts ? 1 : 2) * px, px, -1);
    ipk_call call = { &stages[1], &b->gray, &b->out };
    if (time_median(b, enqueue_ipk, &call, &alone->ms) != 0) alone->status = "error";
    row *chain = add_row(b, fc->unfused, px * (3 + 1 + 1 + (counts ? 0 : 1)), px, -1);
    if (time_median(b, enqueue_gray_consumer, stages, &chain->ms) != 0) chain->status = "error";
    /* the target (median, entropy): the consumer's time alone plus 20%; a fused histogram also
     * writes the gray image, which the histogram alone does not, so it has none */
    row *r = add_row(b, fc->fused, px * (3 + 1), px, alone->ms > 0 && !counts ? alone->ms * 1.2 : -1);
    plan p;
    fuser *f = NULL;
    fuse_group g;
    fuse_kernel k;
    int rc = fused_kernel_for(reg, fc->text, &p, &f, &g, &k);
    if (rc < 0) {
        r->status = "no plugins";
        return;
    }
    if (rc > 0) {
        r->status = rc == 2 ? "not fused" : "no NVRTC";
    } else {
        fused_call c = { f, &k, &g, &b->rgb, &b->out };
        r->status = check_fused(b, &c, stages);
        if (strcmp(r->status, "ok") == 0 && time_median(b, enqueue_fused, &c, &r->ms) != 0) r->status = "error";
    }
    fuser_destroy(f);
    plan_free(&p);
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Median per-image time of the plan on a device-resident 1024x1024 RGB image, result left on the
 * device: wall time of exec_run (launches, the graph replay, the wait), or with profile the sum
 * of the stages' event times (the kernels alone). */
static int time_exec(bench *b, const plan *p, int no_fuse, int no_graph, int profile, double *ms)
{
    exec_options eo = { EXEC_GPU, 0, 1, EXEC_COPY, profile, 0 };
    exec_fusion_options fo = { no_fuse, no_graph, 0 };
    exec_ctx *ctx = NULL;
    char err[1024];
    ip_shape shape = { GRAPH_IMG, GRAPH_IMG, 3, IP_U8 };
    size_t row_bytes = (size_t)GRAPH_IMG * 3, bytes = row_bytes * GRAPH_IMG;
    void *dev = NULL;
    double t[MAX_RUNS];
    int rc = exec_create(&ctx, &eo, err, sizeof err);
    if (rc == IP_OK) {
        exec_set_fusion(ctx, &fo);
        exec_keep_result_on_device(ctx, 1);
        rc = exec_device_input(ctx, p, &shape, bytes, &dev, err, sizeof err);
    }
    if (rc == IP_OK && !CK(cudaMemset(dev, 0x5A, bytes))) rc = IP_ECUDA;
    for (int i = -WARMUP; rc == IP_OK && i < b->runs; i++) {
        ip_image in = { dev, (ptrdiff_t)row_bytes, shape, 1 }, out;
        exec_profile prof;
        double t0 = wall_ms();
        rc = exec_run(ctx, p, &in, NULL, &out, &prof, err, sizeof err);
        double sum = 0;
        for (int s = 0; s < prof.n_stages; s++) sum += prof.stage_ms[s];
        if (i >= 0) t[i] = profile ? sum : wall_ms() - t0;
    }
    if (rc != IP_OK) fprintf(stderr, "bench_gpu: denoise %dx%d: %s\n", GRAPH_IMG, GRAPH_IMG, err);
    exec_destroy(ctx);
    if (rc == IP_OK) *ms = bench_median(t, b->runs);
    return rc;
}

static void bench_graph(bench *b, const registry *reg)
{
    static const struct { const char *name; int no_fuse, no_graph, profile; } runs[] = {
        { "denoise 1024 kernels' sum", 1, 1, 1 },
        { "denoise 1024 launched", 1, 1, 0 },
        { "denoise 1024 graphed", 1, 0, 0 },
        { "denoise 1024 graphed+fused", 0, 0, 0 },
    };
    char path[4096], err[1024];
    pl_pipeline pl;
    plan p;
    ip_shape shape = { GRAPH_IMG, GRAPH_IMG, 3, IP_U8 };
    snprintf(path, sizeof path, "%s/pipelines/denoise.pipe", IMGPIPE_BENCH_SOURCE);
    int rc = pl_parse_file(path, &pl, err, sizeof err);
    if (rc == IP_OK) {
        rc = bench_plan(reg, &pl, &shape, &p);
        pl_free(&pl);
    } else {
        fprintf(stderr, "bench_gpu: %s\n", err);
    }
    double px = (double)GRAPH_IMG * GRAPH_IMG, sum = -1;
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        /* The graph's aim: the chain per image in no more than its kernels' sum. */
        row *r = add_row(b, runs[i].name, px * (3 + 1 + 1 + 1 + 1 + 1), px, i > 0 ? sum : -1);
        r->is_transfer = 1;
        if (rc != IP_OK) r->status = "no plugins";
        else if (time_exec(b, &p, runs[i].no_fuse, runs[i].no_graph, runs[i].profile, &r->ms) != IP_OK)
            r->status = "error";
        if (i == 0 && strcmp(r->status, "ok") == 0) sum = r->ms;
    }
    if (rc == IP_OK) plan_free(&p);
}

static void bench_core(bench *b)
{
    registry reg;
    char err[1024];
    const char *dirs = getenv("IMGPIPE_BENCH_PLUGINS") ? getenv("IMGPIPE_BENCH_PLUGINS") : IMGPIPE_BENCH_PLUGINS;
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) {
        fprintf(stderr, "bench_gpu: plugins: %s (set IMGPIPE_BENCH_PLUGINS)\n", err);
        return;
    }
    for (size_t i = 0; i < sizeof FUSED_CASES / sizeof *FUSED_CASES; i++) bench_fused(b, &reg, &FUSED_CASES[i]);
    bench_graph(b, &reg);
    registry_free(&reg);
}

static void bench_transfers(bench *b, uint8_t *pinned, uint8_t *pageable)
{
    size_t bytes = (size_t)b->gray.stride * IMG;
    double target = bytes / (UPLOAD_TARGET_GBS * 1e9) * 1e3;
    struct { const char *name; void *dst; const void *src; enum cudaMemcpyKind kind; } t[4] = {
        { "upload pinned", b->out.data, pinned, cudaMemcpyHostToDevice },
        { "upload pageable", b->out.data, pageable, cudaMemcpyHostToDevice },
        { "download pinned", pinned, b->gray.data, cudaMemcpyDeviceToHost },
        { "download pageable", pageable, b->gray.data, cudaMemcpyDeviceToHost },
    };
    for (int i = 0; i < 4; i++) {
        row *r = add_row(b, t[i].name, (double)bytes, (double)IMG * IMG, target);
        r->is_transfer = 1;
        copy_call c = { t[i].dst, t[i].src, bytes, t[i].kind };
        if (time_median(b, enqueue_copy, &c, &r->ms) != 0) r->status = "error";
    }
}

/* Host buffers are touched first so page faults stay out of the pageable numbers. */
static void bench_host_copies(bench *b)
{
    size_t bytes = (size_t)b->gray.stride * IMG;
    uint8_t *pinned = NULL, *pageable = malloc(bytes);
    if (!pageable) {
        fprintf(stderr, "bench_gpu: out of host memory\n");
        exit(1);
    }
    CK_FATAL(cudaMallocHost((void **)&pinned, bytes));
    memset(pinned, 0x5A, bytes);
    memset(pageable, 0x5A, bytes);
    bench_transfers(b, pinned, pageable);
    CK(cudaFreeHost(pinned));
    free(pageable);
}

static void bench_copy(bench *b)
{
    size_t bytes = (size_t)b->gray.stride * IMG;
    row *r = add_row(b, "copy device-to-device", 2.0 * bytes, (double)IMG * IMG, -1);
    copy_call c = { b->out.data, b->gray.data, bytes, cudaMemcpyDeviceToDevice };
    if (time_median(b, enqueue_copy, &c, &r->ms) != 0) {
        r->status = "error";
        return;
    }
    b->copy_gbs = r->bytes / (r->ms * 1e6);
}

static void fmt_num(char *buf, size_t n, double v, const char *fmt)
{
    if (v < 0) snprintf(buf, n, "-");
    else snprintf(buf, n, fmt, v);
}

/* One row as text cells: the same cells go to the terminal table and the TSV. */
static void row_cells(const bench *b, const row *r, char cell[9][24])
{
    int ran = strcmp(r->status, "ok") == 0 && r->ms > 0;
    double gbs = ran ? r->bytes / (r->ms * 1e6) : -1;
    fmt_num(cell[0], 24, ran ? r->ms : -1, "%.4f");
    fmt_num(cell[1], 24, ran ? r->pixels / (r->ms * 1e6) : -1, "%.1f");
    fmt_num(cell[2], 24, gbs, "%.0f");
    fmt_num(cell[3], 24, ran && !r->is_transfer && b->copy_gbs > 0 ? 100.0 * gbs / b->copy_gbs : -1, "%.0f%%");
    if (r->npp_ms >= 0) snprintf(cell[4], 24, "%.4f", r->npp_ms);
    else snprintf(cell[4], 24, "%s", r->npp_note);
    fmt_num(cell[5], 24, ran && r->npp_ms >= 0 ? r->npp_ms / r->ms : -1, "%.2f");
    fmt_num(cell[6], 24, r->target_ms, "%.3f");
    snprintf(cell[7], 24, "%s", !ran ? r->status : r->target_ms < 0 ? "-" : r->ms <= r->target_ms ? "met" : "missed");
    snprintf(cell[8], 24, "%s", r->status);
}

static const char *HEADERS[9] = { "imgpipe_ms", "Gpix/s", "GB/s", "%copy", "NPP_ms", "NPP/ipk", "target_ms",
                                  "met", "status" };

static void print_table(const bench *b)
{
    char cell[9][24];
    printf("\n%-27s %10s %7s %6s %6s %14s %8s %9s %9s\n", "operation", HEADERS[0], HEADERS[1], HEADERS[2],
           HEADERS[3], HEADERS[4], HEADERS[5], HEADERS[6], HEADERS[7]);
    for (int i = 0; i < b->n_rows; i++) {
        row_cells(b, &b->rows[i], cell);
        printf("%-27s %10s %7s %6s %6s %14s %8s %9s %9s\n", b->rows[i].name, cell[0], cell[1], cell[2], cell[3],
               cell[4], cell[5], cell[6], cell[7]);
    }
}

static int write_tsv(const bench *b, const char *dir)
{
    char path[4096], cell[9][24];
    snprintf(path, sizeof path, "%s/bench-gpu.tsv", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench_gpu: cannot write %s\n", path);
        return -1;
    }
    fprintf(f, "operation");
    for (int c = 0; c < 9; c++) fprintf(f, "\t%s", HEADERS[c]);
    fputc('\n', f);
    for (int i = 0; i < b->n_rows; i++) {
        row_cells(b, &b->rows[i], cell);
        fprintf(f, "%s", b->rows[i].name);
        for (int c = 0; c < 9; c++) fprintf(f, "\t%s", cell[c]);
        fputc('\n', f);
    }
    int bad = ferror(f);
    bad |= fclose(f);
    printf("wrote %s\n", path);
    return bad ? -1 : 0;
}

static int upload_pattern(ipk_img *dev, int w, int h, int c, int shift)
{
    ipk_img host;
    if (bench_img_pattern(&host, w, h, c, 0, shift, 0, 0) != 0) {
        fprintf(stderr, "bench_gpu: out of host memory\n");
        exit(1);
    }
    if (dev_img(dev, w, h, c, IPK_U8) != 0) exit(1);
    int rc = copy_img(dev, &host, cudaMemcpyHostToDevice);
    bench_img_free(&host);
    return rc;
}

static void setup(bench *b)
{
    CK_FATAL(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
    for (int i = 0; i < b->runs; i++) {
        CK_FATAL(cudaEventCreate(&b->start[i]));
        CK_FATAL(cudaEventCreate(&b->stop[i]));
    }
    if (upload_pattern(&b->rgb, IMG, IMG, 3, 0) || upload_pattern(&b->gray, IMG, IMG, 1, 0) ||
        upload_pattern(&b->ent_src, ENT_IMG, ENT_IMG, 1, 4) || dev_img(&b->out, IMG, IMG, 1, IPK_U8) ||
        dev_img(&b->out2, IMG, IMG, 1, IPK_U8) || dev_img(&b->ent_dst, ENT_IMG, ENT_IMG, 1, IPK_F32))
        exit(1);
    CK_FATAL(cudaMalloc((void **)&b->counts, 256 * sizeof *b->counts));
    CK_FATAL(cudaMalloc((void **)&b->npp_hist, 256 * sizeof *b->npp_hist));
    CK_FATAL(cudaMalloc((void **)&b->npp_kernel, 81 * sizeof *b->npp_kernel));
    for (int i = 0; i < N_OPS; i++) {
        int side = OPS[i].kind == OP_ENTROPY ? ENT_IMG : IMG;
        size_t need = gpu_scratch(&OPS[i], side, side);
        if (need > b->scratch_bytes) b->scratch_bytes = need;
    }
    for (size_t i = 0; i < sizeof FUSED_ONLY_OPS / sizeof *FUSED_ONLY_OPS; i++) {
        size_t need = gpu_scratch(&FUSED_ONLY_OPS[i], IMG, IMG);
        if (need > b->scratch_bytes) b->scratch_bytes = need;
    }
    if (b->scratch_bytes) CK_FATAL(cudaMalloc(&b->scratch, b->scratch_bytes));
    npp_load(&b->npp, b->stream);
}

static void print_device(const bench *b)
{
    struct cudaDeviceProp p;
    int dev = 0, drv = 0, rt = 0;
    CK_FATAL(cudaGetDevice(&dev));
    CK_FATAL(cudaGetDeviceProperties(&p, dev));
    CK_FATAL(cudaDriverGetVersion(&drv));
    CK_FATAL(cudaRuntimeGetVersion(&rt));
    printf("device: %s, sm_%d%d, %d SMs, L2 %d MB, driver %d, runtime %d\n", p.name, p.major, p.minor,
           p.multiProcessorCount, p.l2CacheSize >> 20, drv, rt);
    printf("images: %dx%d u8 (RGB for grayscale), %dx%d values 0..15 for entropy; median of %d runs "
           "after %d warm-up, CUDA events\n", IMG, IMG, ENT_IMG, ENT_IMG, b->runs, WARMUP);
    printf("NPP: %s%s\n", b->npp.missing[0] ? "missing " : "all functions found",
           b->npp.missing[0] ? b->npp.missing : "");
}

static int bench_selected(const char *name, const char *only)
{
    if (!only || !*only) return 1;
    char word[64];
    for (const char *p = only; *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0 && n < sizeof word) {
            memcpy(word, p, n);
            word[n] = '\0';
            if (strstr(name, word)) return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

static int parse_runs(int argc, char **argv)
{
    if (argc < 3) return DEFAULT_RUNS;
    int runs = atoi(argv[2]);
    if (runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "bench_gpu: runs must be 1..%d\n", MAX_RUNS);
        exit(2);
    }
    return runs;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("OUT") ? getenv("OUT") : ".";
    static bench b;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        printf("bench_gpu: no GPU (%s): skipped\n", e != cudaSuccess ? cudaGetErrorString(e) : "no device");
        return 77;
    }
    b.runs = parse_runs(argc, argv);
    init_kernels();
    setup(&b);
    print_device(&b);
    bench_copy(&b);
    /* IMGPIPE_BENCH_ONLY=median,entropy times only the operations whose names contain a listed word */
    const char *only = getenv("IMGPIPE_BENCH_ONLY");
    for (int i = 0; i < N_OPS; i++)
        if (bench_selected(OPS[i].name, only)) bench_op(&b, &OPS[i]);
    if (bench_selected("denoise", only)) bench_denoise(&b);
    if (bench_selected("fused", only) || bench_selected("graph", only)) bench_core(&b);
    if (bench_selected("host copies", only)) bench_host_copies(&b);
    print_table(&b);
    printf("notes: %%copy = bytes read+written by the op over the device copy's rate; NPP median runs on the "
           "interior (no border mode); NPP filters use replicate borders, imgpipe its stage defaults; median rows "
           "run the issue-14 kernels (AUTO), \"(old kernels)\" the ones before them (IPK_GPU_TILE)\n");
    int failed = write_tsv(&b, dir) != 0;
    if (b.dropped) {
        fprintf(stderr, "bench_gpu: %d rows past MAX_ROWS (%d) were not printed: raise MAX_ROWS\n", b.dropped, MAX_ROWS);
        failed = 1;
    }
    for (int i = 0; i < b.n_rows; i++)
        if (strcmp(b.rows[i].status, "mismatch") == 0 || strcmp(b.rows[i].status, "error") == 0) failed = 1;
    return failed;
}
