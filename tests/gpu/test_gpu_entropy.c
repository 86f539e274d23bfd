/* GPU entropy against the CPU kernel: u8/u16 input, f32/u8 output, radii, levels and bins
 * (shared- and global-memory histograms), odd sizes and pitches, and the out-of-range flag. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../../kernels/common/entropy_scratch.cuh"
#include "testutil.h"

static size_t elem_bytes(ipk_dtype t) { return t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4; }
static size_t row_bytes(const ipk_img *im) { return (size_t)im->width * im->channels * elem_bytes(im->dtype); }

static int cuda_ok(cudaError_t e, const char *what)
{
    CHECK(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

static ipk_img dev_alloc(int w, int h, ipk_dtype t, int pad)
{
    ipk_img d = {NULL, (ptrdiff_t)((size_t)w * elem_bytes(t) + (size_t)pad), w, h, 1, t};
    if (!cuda_ok(cudaMalloc(&d.data, (size_t)d.stride * (size_t)(h ? h : 1)), "cudaMalloc")) d.data = NULL;
    return d;
}

/* Random values below levels (the CPU kernel refuses others). */
static ipk_img random_source(int w, int h, ipk_dtype t, int levels, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = tu_img_random(w, h, 1, t, t == IPK_U8 ? 3 : 6, &rng);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            if (t == IPK_U8) {
                if (levels < 256) *(uint8_t *)tu_px(&src, x, y, 0) %= (uint8_t)levels;
            } else *(uint16_t *)tu_px(&src, x, y, 0) = (uint16_t)(*(uint16_t *)tu_px(&src, x, y, 0) % levels);
        }
    return src;
}

/* Runs the GPU kernel on src; fills got and the two flag words. */
static int run_gpu(const ipk_img *src, ipk_img *got, const ipk_entropy_params *p, uint32_t flag[2])
{
    int w = src->width, h = src->height;
    size_t scratch_bytes = ipk_entropy_gpu_scratch(w, h, p);
    void *scratch = NULL;
    ipk_img dsrc = dev_alloc(w, h, src->dtype, 10), ddst = dev_alloc(w, h, got->dtype, 12);
    int ok = dsrc.data && ddst.data && cuda_ok(cudaMalloc(&scratch, scratch_bytes), "scratch");
    ok = ok && cuda_ok(cudaMemset(scratch, 0x5a, scratch_bytes), "poison scratch");
    ok = ok && cuda_ok(cudaMemcpy2D(dsrc.data, dsrc.stride, src->data, src->stride, row_bytes(src), h,
                                    cudaMemcpyHostToDevice), "upload");
    ok = ok && cuda_ok(cudaMemset(ddst.data, 0xa5, (size_t)ddst.stride * h), "poison");
    if (ok) {
        int rc = ipk_entropy_gpu(&dsrc, &ddst, p, scratch, scratch_bytes, NULL);
        CHECK(rc == IPK_OK, "ipk_entropy_gpu rc %d", rc);
        ok = rc == IPK_OK && cuda_ok(cudaDeviceSynchronize(), "kernel");
    }
    ok = ok && cuda_ok(cudaMemcpy2D(got->data, got->stride, ddst.data, ddst.stride, row_bytes(got), h,
                                    cudaMemcpyDeviceToHost), "download");
    ok = ok && cuda_ok(cudaMemcpy(flag, (char *)scratch + IPK_ENTROPY_GPU_FLAG_OFFSET, 8, cudaMemcpyDeviceToHost), "flag");
    cudaFree(scratch);
    cudaFree(dsrc.data);
    cudaFree(ddst.data);
    return ok;
}

static int run_case(int w, int h, ipk_dtype in, ipk_dtype out, int radius, int levels, int bins, double scale,
                    uint64_t seed)
{
    ipk_entropy_params p = {radius, levels, bins, scale};
    ipk_img src = random_source(w, h, in, levels, seed);
    ipk_img want = tu_img_zeros(w, h, 1, out, 0), got = tu_img_zeros(w, h, 1, out, 5);
    int64_t bad = -1;
    int cpu = ipk_entropy_cpu(&src, &want, &p, 1, &bad);
    CHECK(cpu == IPK_OK, "ipk_entropy_cpu rc %d", cpu);
    uint32_t flag[2] = {7, 7};
    int ok = run_gpu(&src, &got, &p, flag);
    if (ok) {
        double diff = tu_max_diff(&want, &got), tol = out == IPK_F32 ? 1e-5 : 0;
        CHECK(diff <= tol, "%dx%d in %d out %d r%d levels %d bins %d: max diff %g", w, h, (int)in, (int)out, radius,
              levels, bins, diff);
        CHECK(flag[0] == 0 && flag[1] == 0, "flag set on in-range input: %u %u", flag[0], flag[1]);
        ok = diff <= tol;
    }
    tu_img_free(&src);
    tu_img_free(&want);
    tu_img_free(&got);
    return ok;
}

static void small_sizes(int quick)
{
    static const int sizes[][2] = {{1, 1}, {1, 13}, {13, 1}, {7, 5}, {37, 23}};
    static const int radii[] = {1, 2, 3, 4, 7, 15, 30};
    const size_t nradii = quick ? 3 : sizeof radii / sizeof radii[0];
    static const int lb[][2] = {{16, 16}, {256, 16}, {256, 256}, {200, 7}, {2, 1}};
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t r = 0; r < nradii; r++)
            for (size_t i = 0; i < sizeof lb / sizeof lb[0]; i++)
                for (int o = 0; o < 2; o++) {
                    ipk_dtype out = o ? IPK_U8 : IPK_F32;
                    double scale = i % 3 == 0 ? 1.0 : i % 3 == 1 ? 1 / log(2.0) : 1 / log(10.0);
                    if (!run_case(sizes[s][0], sizes[s][1], IPK_U8, out, radii[r], lb[i][0], lb[i][1], scale, seed++))
                        return;
                    if (!run_case(sizes[s][0], sizes[s][1], IPK_U16, out, radii[r], lb[i][0] * 3, lb[i][1], scale,
                                  seed++))
                        return;
                }
}

/* Bins too many for shared memory: histograms in the scratch buffer. */
static void many_bins(void)
{
    run_case(37, 23, IPK_U16, IPK_F32, 2, 4000, 3000, 1.0, 401);
    run_case(211, 97, IPK_U16, IPK_F32, 7, 65536, 65536, 1 / log(2.0), 402);
    run_case(101, 300, IPK_U16, IPK_U8, 1, 1000, 1000, 1.0, 403);
    run_case(64, 64, IPK_U8, IPK_F32, 3, 256, 256, 1.0, 404);
}

/* The <= 16 bins, radius <= 3 path: several 1024-column blocks and 32-row strips, widths that
 * end inside a thread's 8 columns, odd pitches (scalar stores) and 16-byte ones. */
static void fast_path(int quick)
{
    static const int sizes[][2] = {{2053, 71}, {1031, 33}, {17, 97}, {1024, 64}};
    const int nsizes = quick ? 2 : 4;
    uint64_t seed = 700;
    for (int s = 0; s < nsizes; s++)
        for (int r = 1; r <= 3; r++) {
            run_case(sizes[s][0], sizes[s][1], IPK_U8, IPK_F32, r, 16, 16, 1 / log(2.0), seed++);
            run_case(sizes[s][0], sizes[s][1], IPK_U8, IPK_U8, r, 256, 13, 1.0, seed++);
            run_case(sizes[s][0], sizes[s][1], IPK_U16, IPK_F32, r, 4096, 16, 1 / log(10.0), seed++);
        }
}

static void large(void)
{
    run_case(4097, 3001, IPK_U8, IPK_F32, 2, 16, 16, 1.0, 501);
    run_case(4097, 3001, IPK_U8, IPK_U8, 2, 256, 256, 1 / log(2.0), 502);
    run_case(1031, 517, IPK_U16, IPK_F32, 4, 65536, 64, 1.0, 503);
}

/* A value >= levels: clamped to levels - 1 on the GPU and reported in the flag words. */
static void out_of_range(void)
{
    const int w = 23, h = 17, levels = 16;
    ipk_entropy_params p = {2, levels, 16, 1.0};
    ipk_img src = random_source(w, h, IPK_U8, levels, 601);
    *(uint8_t *)tu_px(&src, 5, 3, 0) = 40;
    *(uint8_t *)tu_px(&src, 20, 11, 0) = 200;
    ipk_img got = tu_img_zeros(w, h, 1, IPK_F32, 0), want = tu_img_zeros(w, h, 1, IPK_F32, 0);
    int64_t bad = -1;
    CHECK(ipk_entropy_cpu(&src, &want, &p, 1, &bad) == IPK_ERANGE && bad == 40, "cpu: bad %lld", (long long)bad);
    uint32_t flag[2] = {0, 0};
    if (run_gpu(&src, &got, &p, flag)) {
        CHECK(flag[0] != 0 && flag[1] == 200, "flag %u, value %u", flag[0], flag[1]);
        *(uint8_t *)tu_px(&src, 5, 3, 0) = levels - 1;
        *(uint8_t *)tu_px(&src, 20, 11, 0) = levels - 1;
        CHECK(ipk_entropy_cpu(&src, &want, &p, 1, &bad) == IPK_OK, "cpu on clamped input");
        CHECK(tu_max_diff(&want, &got) <= 1e-5, "clamped result differs by %g", tu_max_diff(&want, &got));
    }
    tu_img_free(&src);
    tu_img_free(&got);
    tu_img_free(&want);
}

static void bad_arguments(void)
{
    static unsigned char buf[4096];
    ipk_img a = {buf, 8, 8, 8, 1, IPK_U8}, b = {buf, 32, 8, 8, 1, IPK_F32};
    ipk_entropy_params p = {31, 256, 16, 1.0};
    CHECK(ipk_entropy_gpu(&a, &b, &p, buf, sizeof buf, NULL) == IPK_EINVAL, "radius 31 accepted");
    p.radius = 2;
    p.bins = 300;
    CHECK(ipk_entropy_gpu(&a, &b, &p, buf, sizeof buf, NULL) == IPK_EINVAL, "bins > levels accepted");
    p.bins = 16;
    a.channels = 3;
    CHECK(ipk_entropy_gpu(&a, &b, &p, buf, sizeof buf, NULL) == IPK_EINVAL, "3 channels accepted");
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
    /* IMGPIPE_TEST_QUICK=1 (compute-sanitizer): fewer radii, no large images */
    const int quick = tu_quick();
    bad_arguments();
    small_sizes(quick);
    many_bins();
    out_of_range();
    fast_path(quick);
    if (!quick) large();
    else run_case(301, 67, IPK_U8, IPK_U8, 2, 16, 16, 1 / log(2.0), 504);
    return tu_finish();
}
