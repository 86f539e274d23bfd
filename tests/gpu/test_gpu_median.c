/* GPU median against the CPU kernel: every dtype, channel count, border and radius on odd
 * sizes, device pitches that are not the width, and a few large images; u8 through both the
 * issue-14 kernels (IPK_GPU_NET, what AUTO runs but for 8-bit 3x3) and the ones before them
 * (IPK_GPU_TILE); 1-channel u8 5x5 and 7x7 (the shuffle tiles of median_sep_warp.cu) and 3x3
 * through the vec median (IPK_GPU_VEC and each of its instantiations) on the same images and on
 * misaligned base pointers. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "ipk_bench.h"

static size_t elem_bytes(ipk_dtype t) { return t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4; }

static int cuda_ok(cudaError_t e, const char *what)
{
    CHECK(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

/* A device image shaped like `like` with rows pad bytes longer than the data, starting shift bytes
 * into its allocation (*base, for cudaFree). */
static ipk_img dev_alloc(const ipk_img *like, int pad, int shift, void **base)
{
    ipk_img d = *like;
    d.stride = (ptrdiff_t)((size_t)like->width * like->channels * elem_bytes(like->dtype) + (size_t)pad);
    d.data = NULL;
    *base = NULL;
    if (cuda_ok(cudaMalloc(base, (size_t)d.stride * (size_t)(like->height ? like->height : 1) + (size_t)shift),
                "cudaMalloc"))
        d.data = (char *)*base + shift;
    return d;
}

static size_t row_bytes(const ipk_img *im) { return (size_t)im->width * im->channels * elem_bytes(im->dtype); }

/* The vec median's instantiations (ipk_median_gpu_vec_variant): rows, blocks per SM, paired. */
static const int VEC_VARIANTS[][3] = {{2, 8, 0}, {2, 10, 0}, {4, 7, 0}, {6, 6, 0}, {2, 6, 1}};
#define N_VEC_VARIANTS ((int)(sizeof VEC_VARIANTS / sizeof VEC_VARIANTS[0]))

/* How a run calls the GPU: through ipk_median_gpu_path on `path`, or one of VEC_VARIANTS (variant
 * >= 0); shift: bytes the source's base pointer is off (the destination's: 16 - shift). */
typedef struct {
    ipk_gpu_path path;
    int variant;
    int shift;
} gpu_call;

static int call_gpu(const ipk_img *dsrc, const ipk_img *ddst, int radius, ipk_border border, gpu_call call)
{
    if (call.variant >= 0) {
        const int *v = VEC_VARIANTS[call.variant];
        return ipk_median_gpu_vec_variant(dsrc, ddst, border, v[0], v[1], v[2], NULL);
    }
    return ipk_median_gpu_path(dsrc, ddst, radius, border, NULL,
                               ipk_median_gpu_scratch(dsrc->width, dsrc->height, dsrc->channels, dsrc->dtype, radius),
                               NULL, call.path);
}

/* dev_pad < 0: rows 5 values longer than the data (not a multiple of 16 bytes); else that pad. */
static int run_call(int w, int h, int c, ipk_dtype t, int radius, ipk_border border, uint64_t seed, int dev_pad,
                    gpu_call call)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    int host_pad = t == IPK_U8 ? 3 : (int)elem_bytes(t) * 3;
    if (dev_pad < 0) dev_pad = (int)elem_bytes(t) * 5;
    ipk_img src = tu_img_random(w, h, c, t, host_pad, &rng);
    ipk_img want = tu_img_zeros(w, h, c, t, 0), got = tu_img_zeros(w, h, c, t, host_pad);
    void *src_base, *dst_base;
    const int dst_shift = call.shift ? 16 - call.shift : 0;
    ipk_img dsrc = dev_alloc(&src, dev_pad, call.shift, &src_base);
    ipk_img ddst = dev_alloc(&src, dev_pad, dst_shift, &dst_base);
    int ok = dsrc.data && ddst.data;
    ok = ok && cuda_ok(cudaMemcpy2D(dsrc.data, dsrc.stride, src.data, src.stride, row_bytes(&src), h,
                                    cudaMemcpyHostToDevice), "upload");
    ok = ok && cuda_ok(cudaMemset(ddst.data, 0xa5, (size_t)ddst.stride * h), "poison");
    if (ok) {
        int rc = call_gpu(&dsrc, &ddst, radius, border, call);
        CHECK(rc == IPK_OK, "median gpu rc %d (path %d variant %d)", rc, (int)call.path, call.variant);
        ok = cuda_ok(cudaDeviceSynchronize(), "kernel");
    }
    ok = ok && cuda_ok(cudaMemcpy2D(got.data, got.stride, ddst.data, ddst.stride, row_bytes(&got), h,
                                    cudaMemcpyDeviceToHost), "download");
    int cpu = ipk_median_cpu(&src, &want, radius, border, 1);
    CHECK(cpu == IPK_OK, "ipk_median_cpu rc %d", cpu);
    if (ok) {
        double diff = tu_max_diff(&want, &got);
        CHECK(diff == 0, "%dx%d c%d dtype %d r%d border %d path %d variant %d shift %d: max diff %g", w, h, c, (int)t,
              radius, (int)border, (int)call.path, call.variant, call.shift, diff);
        ok = diff == 0;
    }
    cudaFree(src_base);
    cudaFree(dst_base);
    tu_img_free(&src);
    tu_img_free(&want);
    tu_img_free(&got);
    return ok;
}

static int run_path(int w, int h, int c, ipk_dtype t, int radius, ipk_border border, uint64_t seed, int dev_pad,
                    ipk_gpu_path path)
{
    gpu_call call = {path, -1, 0};
    return run_call(w, h, c, t, radius, border, seed, dev_pad, call);
}

/* What IPK_GPU_VEC takes: 1-channel u8 3x3, not shrink. */
static int vec_case(int c, ipk_dtype t, int radius, ipk_border border)
{
    return c == 1 && t == IPK_U8 && radius == 1 && border != IPK_SHRINK;
}

/* u8 and u16 through both paths (they differ only there), and 8-bit 3x3 through the networks and the
 * vec median too; f32 through AUTO. */
static int run_case_pad(int w, int h, int c, ipk_dtype t, int radius, ipk_border border, uint64_t seed, int dev_pad)
{
    int ok = run_path(w, h, c, t, radius, border, seed, dev_pad, IPK_GPU_AUTO);
    if (t != IPK_F32) ok = run_path(w, h, c, t, radius, border, seed, dev_pad, IPK_GPU_TILE) && ok;
    /* 8-bit 3x3: AUTO takes the tile kernel (faster there), so the networks are asked for by name */
    if (t == IPK_U8 && radius == 1) ok = run_path(w, h, c, t, radius, border, seed, dev_pad, IPK_GPU_NET) && ok;
    if (vec_case(c, t, radius, border)) ok = run_path(w, h, c, t, radius, border, seed, dev_pad, IPK_GPU_VEC) && ok;
    return ok;
}

static int run_case(int w, int h, int c, ipk_dtype t, int radius, ipk_border border, uint64_t seed)
{
    return run_case_pad(w, h, c, t, radius, border, seed, -1);
}

static void small_sizes(int quick)
{
    static const int sizes[][2] = {{1, 1}, {1, 13}, {13, 1}, {7, 5}, {37, 23}, {61, 4}};
    static const int radii[] = {1, 2, 3, 8, 4, 7, 12, 15, 25};
    const size_t nradii = quick ? 4 : sizeof radii / sizeof radii[0];
    static const ipk_dtype types[] = {IPK_U8, IPK_U16, IPK_F32};
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int ti = 0; ti < 3; ti++)
            for (int c = 1; c <= 4; c++)
                for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
                    for (size_t r = 0; r < nradii; r++)
                        if (!run_case(sizes[s][0], sizes[s][1], c, types[ti], radii[r], (ipk_border)b, seed++)) return;
}

/* The packed radius 1..3 paths (u8; u16 on the separable kernel) on unaligned rows, widths
 * around multiples of 4 and 16. */
static void packed(int quick)
{
    static const int widths[] = {2, 3, 4, 5, 6, 7, 8, 15, 16, 17, 63, 64, 65, 130, 257};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i += quick ? 2 : 1)
        for (int r = 1; r <= 3; r++)
            for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
                for (ipk_dtype t = IPK_U8; t <= IPK_U16; t++) {
                    run_case(widths[i], 19, 1, t, r, (ipk_border)b, 100 + i);
                    run_case(widths[i], 2, 1, t, r, (ipk_border)b, 200 + i);
                }
}

/* Rows whose pitch is a multiple of 16 bytes (u8 and u16): the 16-byte loads and stores, with
 * the thread groups at both image edges and in a partial last group on the slow path. */
static void packed_aligned(int quick)
{
    static const int widths[] = {16, 19, 20, 21, 36, 37, 47, 100, 513, 1000};
    static const int heights[] = {1, 3, 9, 19, 40};
    uint64_t seed = 700;
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        for (size_t j = 0; j < sizeof heights / sizeof heights[0]; j += quick ? 2 : 1)
            for (int r = 1; r <= 3; r++)
                for (int b = IPK_REPLICATE; b <= IPK_ZERO; b++) {
                    int pad = (16 - widths[i] % 16) % 16 + 16 * (int)(j % 2);
                    run_case_pad(widths[i], heights[j], 1, IPK_U8, r, (ipk_border)b, seed++, pad);
                    pad = (16 - 2 * widths[i] % 16) % 16 + 16 * (int)(j % 2);
                    run_case_pad(widths[i], heights[j], 1, IPK_U16, r, (ipk_border)b, seed++, pad);
                }
}

/* The vec median (IPK_GPU_VEC and every instantiation of it) on base pointers 1 to 15 bytes off
 * 16 (the gathers), aligned ones with pitches a multiple of 16 (the 16-byte loads and stores), widths
 * around the 16-pixel groups and the 512-pixel warps, heights odd and even around the thread tiles. */
static void vec_paths(int quick)
{
    static const int sizes[][2] = {{1, 1}, {1, 13}, {13, 1}, {2, 2}, {16, 3}, {17, 9}, {31, 4}, {37, 23},
                                   {509, 7}, {512, 8}, {513, 5}, {1024, 13}, {1031, 33}};
    uint64_t seed = 900;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i += quick ? 2 : 1)
        for (int b = IPK_REPLICATE; b <= IPK_ZERO; b++)
            for (int v = -1; v < N_VEC_VARIANTS; v++) {
                const int w = sizes[i][0], h = sizes[i][1];
                gpu_call call = {IPK_GPU_VEC, v, (int)((seed * 7) % 16)};
                run_call(w, h, 1, IPK_U8, 1, (ipk_border)b, seed++, -1, call);
                call.shift = 0;
                run_call(w, h, 1, IPK_U8, 1, (ipk_border)b, seed++, (16 - w % 16) % 16 + 16 * (int)(i % 2), call);
            }
    for (int v = -1; v < N_VEC_VARIANTS && !quick; v++) {
        gpu_call call = {IPK_GPU_VEC, v, 0};
        run_call(4097, 3001, 1, IPK_U8, 1, IPK_REFLECT101, 950 + v, -1, call);
        run_call(4096, 2049, 1, IPK_U8, 1, IPK_ZERO, 960 + v, 0, call);
        call.shift = 3;
        run_call(4096, 2047, 1, IPK_U8, 1, IPK_REPLICATE, 970 + v, 0, call);
    }
}

static void large(void)
{
    for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++) run_case(4097, 3001, 1, IPK_U8, 1, (ipk_border)b, 300 + b);
    run_case(4097, 3001, 1, IPK_U8, 2, IPK_REPLICATE, 310);
    run_case(4097, 3001, 1, IPK_U8, 2, IPK_ZERO, 315);
    run_case_pad(4096, 3001, 1, IPK_U8, 2, IPK_REFLECT101, 316, 0);
    run_case_pad(4090, 2999, 1, IPK_U8, 3, IPK_REPLICATE, 317, 6);
    run_case_pad(4090, 2999, 1, IPK_U8, 1, IPK_ZERO, 318, 22);
    run_case(4097, 3001, 1, IPK_U8, 7, IPK_REFLECT101, 311);
    run_case(1031, 517, 1, IPK_U8, 8, IPK_ZERO, 319);
    run_case(1031, 517, 1, IPK_U8, 25, IPK_SHRINK, 320);
    run_case(1031, 517, 4, IPK_U8, 12, IPK_REPLICATE, 321);
    run_case(1031, 517, 3, IPK_U8, 3, IPK_SHRINK, 312);
    run_case(1031, 517, 1, IPK_U16, 2, IPK_ZERO, 313);
    run_case_pad(2048, 1001, 1, IPK_U16, 1, IPK_REFLECT101, 322, 0);
    run_case_pad(2040, 999, 1, IPK_U16, 3, IPK_REPLICATE, 323, 16);
    run_case(1031, 517, 2, IPK_F32, 1, IPK_REFLECT101, 314);
}

/* The plain call on a 1-channel u8 image whose device source and destination start src_off and
 * dst_off bytes past a cudaMalloc'd (256-byte aligned) base, rows width + 7 apart. */
static void run_offset(int w, int h, int radius, ipk_border border, uint64_t seed, int src_off, int dst_off)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = tu_img_random(w, h, 1, IPK_U8, 3, &rng);
    ipk_img want = tu_img_zeros(w, h, 1, IPK_U8, 0), got = tu_img_zeros(w, h, 1, IPK_U8, 1);
    ipk_img dsrc = src, ddst = src;
    void *sbase = NULL, *dbase = NULL;
    dsrc.stride = ddst.stride = w + 7;
    const size_t bytes = (size_t)dsrc.stride * h + 16;
    int ok = cuda_ok(cudaMalloc(&sbase, bytes), "cudaMalloc") && cuda_ok(cudaMalloc(&dbase, bytes), "cudaMalloc");
    dsrc.data = sbase ? (char *)sbase + src_off : NULL;
    ddst.data = dbase ? (char *)dbase + dst_off : NULL;
    ok = ok && cuda_ok(cudaMemcpy2D(dsrc.data, dsrc.stride, src.data, src.stride, (size_t)w, h,
                                    cudaMemcpyHostToDevice), "upload");
    ok = ok && cuda_ok(cudaMemset(dbase, 0xa5, bytes), "poison");
    if (ok) {
        int rc = ipk_median_gpu(&dsrc, &ddst, radius, border, NULL, 0, NULL);
        CHECK(rc == IPK_OK, "r%d rc %d", radius, rc);
        ok = cuda_ok(cudaDeviceSynchronize(), "kernel");
    }
    ok = ok && cuda_ok(cudaMemcpy2D(got.data, got.stride, ddst.data, ddst.stride, (size_t)w, h,
                                    cudaMemcpyDeviceToHost), "download");
    CHECK(ipk_median_cpu(&src, &want, radius, border, 1) == IPK_OK, "ipk_median_cpu");
    if (ok) {
        double diff = tu_max_diff(&want, &got);
        CHECK(diff == 0, "%dx%d r%d border %d offsets %d,%d: max diff %g", w, h, radius, (int)border, src_off,
              dst_off, diff);
    }
    cudaFree(sbase);
    cudaFree(dbase);
    tu_img_free(&src);
    tu_img_free(&want);
    tu_img_free(&got);
}

/* The u8 5x5 and 7x7 shuffle tiles with source and destination at base pointers off by 1..15 bytes
 * (the vector loads and stores fall back to the gathers) and pitches that are not multiples of 16. */
static void sep_misaligned(void)
{
    static const int offsets[][2] = {{1, 5}, {3, 0}, {4, 12}, {8, 8}, {15, 1}};
    static const int sizes[][2] = {{37, 23}, {130, 17}, {1000, 9}};
    uint64_t seed = 900;
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int r = 2; r <= 3; r++)
                for (int b = IPK_REPLICATE; b <= IPK_ZERO; b++)
                    run_offset(sizes[s][0], sizes[s][1], r, (ipk_border)b, seed++, offsets[o][0], offsets[o][1]);
}

/* Images taller than 65535 blocks of rows (4 warps of 2 rows): the u8 5x5 and 7x7 shuffle tiles
 * take the rest of the grid's rows in its third dimension. */
static void sep_tall(void)
{
    for (int r = 2; r <= 3; r++)
        run_path(9, 530000, 1, IPK_U8, r, r == 2 ? IPK_ZERO : IPK_REFLECT101, 330 + (uint64_t)r, -1, IPK_GPU_NET);
}

static void bad_arguments(void)
{
    static unsigned char buf[64];
    ipk_img a = {buf, 16, 4, 4, 1, IPK_U8}, b = a;
    CHECK(ipk_median_gpu(&a, &b, 26, IPK_REPLICATE, NULL, 0, NULL) == IPK_EINVAL, "radius 26 accepted");
    CHECK(ipk_median_gpu_path(&a, &b, 1, IPK_REPLICATE, NULL, 0, NULL, (ipk_gpu_path)1) == IPK_EINVAL,
          "the deleted strip path accepted");
    CHECK(ipk_median_gpu_path(&a, &b, 1, IPK_REPLICATE, NULL, 0, NULL, (ipk_gpu_path)7) == IPK_EINVAL,
          "unknown path accepted");
    CHECK(ipk_median_gpu_path(&a, &b, 1, IPK_REPLICATE, NULL, 0, NULL, (ipk_gpu_path)4) == IPK_EINVAL,
          "the deleted reg path accepted");
    CHECK(ipk_median_gpu_path(&a, &b, 2, IPK_REPLICATE, NULL, 0, NULL, IPK_GPU_VEC) == IPK_EINVAL,
          "vec path: radius 2 accepted");
    CHECK(ipk_median_gpu_path(&a, &b, 1, IPK_SHRINK, NULL, 0, NULL, IPK_GPU_VEC) == IPK_EINVAL,
          "vec path: shrink accepted");
    CHECK(ipk_median_gpu_vec_variant(&a, &b, IPK_REPLICATE, 3, 8, 0, NULL) == IPK_EINVAL,
          "vec variant: 3 rows accepted");
    CHECK(ipk_median_gpu_vec_variant(&a, &b, IPK_REPLICATE, 2, 7, 0, NULL) == IPK_EINVAL,
          "vec variant: 7 blocks accepted");
    CHECK(ipk_median_gpu_vec_variant(&a, &b, IPK_SHRINK, 2, 8, 0, NULL) == IPK_EINVAL, "vec variant: shrink accepted");
    unsigned short wide[16];
    ipk_img u = {wide, 8, 4, 2, 1, IPK_U16};
    CHECK(ipk_median_gpu_path(&u, &u, 1, IPK_REPLICATE, NULL, 0, NULL, IPK_GPU_VEC) == IPK_EINVAL,
          "vec path: u16 accepted");
    ipk_img two = {buf, 4, 4, 16, 2, IPK_U8};
    CHECK(ipk_median_gpu_path(&two, &two, 1, IPK_REPLICATE, NULL, 0, NULL, IPK_GPU_VEC) == IPK_EINVAL,
          "vec path: 2 channels accepted");
    b.channels = 2;
    CHECK(ipk_median_gpu(&a, &b, 1, IPK_REPLICATE, NULL, 0, NULL) == IPK_EINVAL, "channel mismatch accepted");
    b.channels = 1;
}

int main(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        char why[256];
        snprintf(why, sizeof why, "no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        tu_skip(why);
    }
    /* IMGPIPE_TEST_QUICK=1 (compute-sanitizer): fewer radii, widths and heights, no large images */
    const int quick = tu_quick();
    bad_arguments();
    small_sizes(quick);
    packed(quick);
    packed_aligned(quick);
    sep_misaligned();
    vec_paths(quick);
    if (!quick) {
        large();
        sep_tall();
    }
    return tu_finish();
}
