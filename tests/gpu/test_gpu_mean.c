/* GPU mean against the CPU kernel: bit-identical for u8/u16, 1e-5 for f32, for radii
 * 1, 2, 3, 7, 15 (and 40: over 48 KB of shared memory), every border, dtype and channel count,
 * odd sizes (windows wider than the image included) and pitches; the tile and vec (radius 1 and 2;
 * the band kernel at 3 to 31) paths of ipk_mean_gpu_path one by one. */
#include <stdlib.h>
#include "gpu_testutil.h"
#include "ipk_bench.h"

static void check_case(int w, int h, int c, ipk_dtype t, int radius, ipk_border border, int aligned16,
                       cudaStream_t s, tu_rng *rng)
{
    ipk_img src = tu_img_random(w, h, c, t, 3 * (int)esize(t), rng);
    ipk_img cpu = tu_img_zeros(w, h, c, t, 5 * (int)esize(t));
    CHECK(ipk_mean_cpu(&src, &cpu, radius, border, 1) == IPK_OK, "cpu mean");
    size_t scratch_bytes = ipk_mean_gpu_scratch(w, h, c, t, radius);
    void *scratch = NULL;
    if (scratch_bytes) cuda_ok(cudaMalloc(&scratch, scratch_bytes), "cudaMalloc scratch");
    ipk_img dsrc = dev_upload(&src, aligned16), ddst = dev_alloc(w, h, c, t, !aligned16);
    if (gpu_finish_ok(ipk_mean_gpu(&dsrc, &ddst, radius, border, scratch, scratch_bytes, s), "ipk_mean_gpu")) {
        ipk_img got = dev_download(&ddst);
        double diff = tu_max_diff(&got, &cpu);
        CHECK(diff <= (t == IPK_F32 ? 1e-5 : 0.0), "%dx%d c=%d dtype=%d r=%d border=%d: max diff %g", w, h, c,
              (int)t, radius, (int)border, diff);
        tu_img_free(&got);
    }
    cudaFree(scratch);
    dev_free(&dsrc);
    dev_free(&ddst);
    tu_img_free(&src);
    tu_img_free(&cpu);
}

/* One path of ipk_mean_gpu_path (variant < 0) or variant of ipk_mean_gpu_band against the CPU,
 * 1-channel u8; shift > 0 views both images from byte `shift` of a wider one, so that no row is
 * 16-byte aligned. */
static void check_call(int w, int h, int radius, ipk_border border, int aligned16, int shift, ipk_gpu_path path,
                       int variant, cudaStream_t s, tu_rng *rng)
{
    ipk_img wide = tu_img_random(w + shift, h, 1, IPK_U8, 3, rng);
    for (int y = 0; y < h; y++)   /* runs of 0 and 255 drive the sums to their extremes */
        for (int x = 0; x < w + shift; x += 1 + (int)(tu_next(rng) % 9))
            *(uint8_t *)tu_px(&wide, x, y, 0) = (tu_next(rng) & 1) ? 255 : 0;
    const ipk_img src = tu_img_view(&wide, shift, w);
    ipk_img cpu = tu_img_zeros(w, h, 1, IPK_U8, 5);
    CHECK(ipk_mean_cpu(&src, &cpu, radius, border, 1) == IPK_OK, "cpu mean");
    ipk_img dwide = dev_upload(&wide, aligned16), ddst_wide = dev_alloc(w + shift, h, 1, IPK_U8, aligned16);
    const ipk_img dsrc = tu_img_view(&dwide, shift, w), ddst = tu_img_view(&ddst_wide, shift, w);
    const int rc = variant < 0 ? ipk_mean_gpu_path(&dsrc, &ddst, radius, border, NULL, 0, s, path)
                               : ipk_mean_gpu_band(&dsrc, &ddst, radius, border, s, variant);
    if (gpu_finish_ok(rc, "ipk_mean_gpu_path")) {
        ipk_img got_wide = dev_download(&ddst_wide);
        const ipk_img got = tu_img_view(&got_wide, shift, w);
        CHECK(tu_max_diff(&got, &cpu) == 0, "path %d variant %d %dx%d r=%d border=%d aligned=%d shift=%d: max diff %g",
              (int)path, variant, w, h, radius, (int)border, aligned16, shift, tu_max_diff(&got, &cpu));
        tu_img_free(&got_wide);
    }
    dev_free(&dwide);
    dev_free(&ddst_wide);
    tu_img_free(&wide);
    tu_img_free(&cpu);
}

static void check_path(int w, int h, int radius, ipk_border border, int aligned16, int shift, ipk_gpu_path path,
                       cudaStream_t s, tu_rng *rng)
{
    check_call(w, h, radius, border, aligned16, shift, path, -1, s, rng);
}

/* The tile path on 1-channel u8 (radius 1 without shrink: the 3x3 float strips; up to 15: the
 * running sums): groups of 16 columns whole or cut, warps and 2048-column blocks whole or cut,
 * tall images, 16-byte rows or not, every border; the values 1 and 4, which named the deleted
 * strip and register kernels, refused. */
static void check_tile_paths(int quick, cudaStream_t s, tu_rng *rng)
{
    const int sizes[][2] = { { 1, 1 }, { 1, 33 }, { 2, 1 }, { 15, 4 }, { 16, 16 }, { 17, 5 }, { 33, 2 },
                             { 511, 37 }, { 512, 19 }, { 513, 3 }, { 2048, 21 }, { 2049, 40 }, { 4111, 67 },
                             { 37, 1000 } };
    int k = 0;
    for (int r = 1; r <= 3; r++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (int b = IPK_REPLICATE; b < IPK_SHRINK; b++, k++) {
                if (quick && k % 3) continue;
                check_path(sizes[i][0], sizes[i][1], r, (ipk_border)b, k & 1, 0, IPK_GPU_TILE, s, rng);
            }
    const int rs_sizes[][2] = { { 1, 1 }, { 1, 40 }, { 31, 1 }, { 9, 13 }, { 223, 70 }, { 224, 31 }, { 225, 65 },
                                { 897, 131 }, { 1031, 20 }, { 2053, 3 } };
    for (int r = 4; r <= 15; r++)
        for (size_t i = 0; i < sizeof rs_sizes / sizeof rs_sizes[0]; i++, k++) {
            if (quick && k % 3) continue;
            check_path(rs_sizes[i][0], rs_sizes[i][1], r, (ipk_border)(k % 4), k & 1, 0, IPK_GPU_TILE, s, rng);
        }
    ipk_img a = dev_alloc(64, 8, 1, IPK_U8, 1), b = dev_alloc(64, 8, 1, IPK_U8, 1);
    CHECK(ipk_mean_gpu_path(&a, &b, 1, IPK_ZERO, NULL, 0, s, (ipk_gpu_path)1) == IPK_EINVAL, "strip value refused");
    CHECK(ipk_mean_gpu_path(&a, &b, 1, IPK_ZERO, NULL, 0, s, (ipk_gpu_path)4) == IPK_EINVAL, "reg value refused");
    dev_free(&a);
    dev_free(&b);
}

/* The vec kernel (radius 1 and 2; shrink with its own counts at the edges): 16-column groups,
 * 512-column warps and 12- to 24-row blocks whole or cut, 1xN and Nx1, heights under the window,
 * prime widths, 16-byte rows or not (pitches that are not the width, base pointers off by 1 to
 * 15 bytes), every border; what it refuses. */
static void check_vec_path(int quick, cudaStream_t s, tu_rng *rng)
{
    const int sizes[][2] = { { 1, 1 }, { 1, 33 }, { 29, 1 }, { 2, 3 }, { 15, 4 }, { 16, 16 }, { 17, 5 }, { 31, 7 },
                             { 33, 2 }, { 18, 12 }, { 97, 25 }, { 496, 24 }, { 511, 37 }, { 512, 19 }, { 513, 3 },
                             { 514, 13 }, { 1021, 23 }, { 1024, 48 }, { 2053, 13 }, { 37, 1000 } };
    int k = 0;
    for (int r = 1; r <= 2; r++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++, k++) {
                if (quick && k % 2) continue;
                check_path(sizes[i][0], sizes[i][1], r, (ipk_border)b, k & 1, 0, IPK_GPU_VEC, s, rng);
                check_path(sizes[i][0], sizes[i][1], r, (ipk_border)b, 1, 1 + k % 15, IPK_GPU_VEC, s, rng);
            }
    for (int r = 1; r <= 2; r++)
        for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
            check_path(quick ? 1031 : 8192, quick ? 301 : 2049, r, (ipk_border)b, 1, 0, IPK_GPU_VEC, s, rng);
    ipk_img a = dev_alloc(64, 8, 1, IPK_U8, 1), b = dev_alloc(64, 8, 1, IPK_U8, 1), c = dev_alloc(64, 8, 2, IPK_U8, 1);
    ipk_img u = dev_alloc(64, 8, 1, IPK_U16, 1), f = dev_alloc(64, 8, 1, IPK_F32, 1);
    CHECK(ipk_mean_gpu_path(&c, &c, 2, IPK_ZERO, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: 2 channels r=2 refused");
    CHECK(ipk_mean_gpu_path(&u, &u, 2, IPK_ZERO, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: u16 r=2 refused");
    CHECK(ipk_mean_gpu_path(&a, &b, 0, IPK_ZERO, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: radius 0 refused");
    CHECK(ipk_mean_gpu_path(&c, &c, 1, IPK_ZERO, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: 2 channels refused");
    CHECK(ipk_mean_gpu_path(&u, &u, 1, IPK_ZERO, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: u16 refused");
    CHECK(ipk_mean_gpu_path(&f, &f, 1, IPK_ZERO, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: f32 refused");
    CHECK(ipk_mean_gpu_path(&a, &b, 1, IPK_ZERO, NULL, 0, s, (ipk_gpu_path)6) == IPK_EINVAL, "unknown path refused");
    CHECK(ipk_mean_gpu_path(&a, &b, 1, IPK_ZERO, NULL, 0, s, IPK_GPU_NET) == IPK_EINVAL, "net refused");
    dev_free(&a);
    dev_free(&b);
    dev_free(&c);
    dev_free(&u);
    dev_free(&f);
}

/* The band kernel (VEC and AUTO at radius 3 to 31, not shrink, 16-byte rows, width >= 272, or 288
 * past radius 15) with the tile kernels on the columns near the sides: the narrowest widths it takes and odd ones, rows
 * fewer than the window, bands cut by the bottom, every border it takes, its three band floors;
 * AUTO with unaligned rows or shrink goes elsewhere and must still be right; what VEC refuses. */
static void check_band_path(int quick, cudaStream_t s, tu_rng *rng)
{
    const int sizes[][2] = { { 272, 1 }, { 273, 2 }, { 288, 5 }, { 300, 31 }, { 400, 33 }, { 401, 70 },
                             { 527, 9 }, { 1031, 130 }, { 4099, 17 } };
    int k = 0;
    for (int r = 3; r <= 31; r += r < 16 ? 1 : 3)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++, k++) {
                if (quick && k % 3) continue;
                check_path(sizes[i][0], sizes[i][1], r, (ipk_border)b, 1, 0, IPK_GPU_AUTO, s, rng);
                if (k % 4 == 0)
                    check_path(sizes[i][0], sizes[i][1], r, (ipk_border)b, 1, 1 + k % 15, IPK_GPU_AUTO, s, rng);
                if (b == IPK_SHRINK) continue;
                if (sizes[i][0] < (r <= 15 ? 272 : 288)) {   /* too narrow for the halo: VEC refuses */
                    ipk_img d = dev_alloc(sizes[i][0], sizes[i][1], 1, IPK_U8, 1);
                    CHECK(ipk_mean_gpu_path(&d, &d, r, (ipk_border)b, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL,
                          "vec: %d columns at radius %d refused", sizes[i][0], r);
                    dev_free(&d);
                    continue;
                }
                check_path(sizes[i][0], sizes[i][1], r, (ipk_border)b, 1, 0, IPK_GPU_VEC, s, rng);
                check_call(sizes[i][0], sizes[i][1], r, (ipk_border)b, 1, 0, IPK_GPU_VEC, k % 3, s, rng);
            }
    for (int b = IPK_REPLICATE; b <= IPK_ZERO; b++)
        for (int v = 0; v <= 2; v++) {
            check_call(quick ? 2053 : 8192, quick ? 301 : 2049, 15, (ipk_border)b, 1, 0, IPK_GPU_VEC, v, s, rng);
            check_call(quick ? 2053 : 8192, quick ? 301 : 1031, 16 + 15 * (v % 2), (ipk_border)b, 1, 0, IPK_GPU_VEC, v,
                       s, rng);
        }
    ipk_img a = dev_alloc(300, 8, 1, IPK_U8, 1), n = dev_alloc(271, 8, 1, IPK_U8, 1), c = dev_alloc(300, 8, 2, IPK_U8, 1);
    ipk_img m = dev_alloc(287, 8, 1, IPK_U8, 1);
    ipk_img u = dev_alloc(300, 8, 1, IPK_U16, 1);
    CHECK(ipk_mean_gpu_band(&a, &a, 15, IPK_SHRINK, s, 0) == IPK_EINVAL, "band: shrink refused");
    CHECK(ipk_mean_gpu_band(&n, &n, 15, IPK_ZERO, s, 1) == IPK_EINVAL, "band: 271 columns refused");
    CHECK(ipk_mean_gpu_band(&a, &a, 32, IPK_ZERO, s, 2) == IPK_EINVAL, "band: radius 32 refused");
    CHECK(ipk_mean_gpu_band(&m, &m, 16, IPK_ZERO, s, 0) == IPK_EINVAL, "band: 287 columns at radius 16 refused");
    CHECK(ipk_mean_gpu_band(&m, &m, 15, IPK_ZERO, s, 0) == IPK_OK, "band: 287 columns at radius 15 taken");
    CHECK(ipk_mean_gpu_band(&a, &a, 2, IPK_ZERO, s, 0) == IPK_EINVAL, "band: radius 2 refused");
    CHECK(ipk_mean_gpu_band(&a, &a, 15, IPK_ZERO, s, 3) == IPK_EINVAL, "band: variant 3 refused");
    CHECK(ipk_mean_gpu_band(&a, &a, 15, IPK_ZERO, s, -1) == IPK_EINVAL, "band: variant -1 refused");
    CHECK(ipk_mean_gpu_band(&c, &c, 15, IPK_ZERO, s, 0) == IPK_EINVAL, "band: 2 channels refused");
    CHECK(ipk_mean_gpu_band(&a, &u, 15, IPK_ZERO, s, 0) == IPK_EINVAL, "band: dtype mismatch refused");
    CHECK(ipk_mean_gpu_path(&a, &a, 32, IPK_ZERO, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: radius 32 refused");
    CHECK(ipk_mean_gpu_path(&u, &u, 15, IPK_ZERO, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: u16 r=15 refused");
    dev_free(&a);
    dev_free(&n);
    dev_free(&c);
    dev_free(&u);
    dev_free(&m);
}

static void check_reference_u8(tu_rng *rng)
{
    ipk_img src = tu_img_random(9, 7, 1, IPK_U8, 3, rng), cpu = tu_img_zeros(9, 7, 1, IPK_U8, 0);
    CHECK(ipk_mean_cpu(&src, &cpu, 2, IPK_SHRINK, 1) == IPK_OK, "cpu mean");
    for (int y = 0; y < 7; y++)
        for (int x = 0; x < 9; x++) {
            unsigned sum = 0, n = 0;
            for (int dy = -2; dy <= 2; dy++)
                for (int dx = -2; dx <= 2; dx++)
                    if (x + dx >= 0 && x + dx < 9 && y + dy >= 0 && y + dy < 7) {
                        sum += (unsigned)tu_get(&src, x + dx, y + dy, 0);
                        n++;
                    }
            CHECK(tu_get(&cpu, x, y, 0) == (sum + n / 2) / n, "reference at %d,%d", x, y);
        }
    tu_img_free(&src);
    tu_img_free(&cpu);
}

int main(void)
{
    need_gpu();
    cudaStream_t s;
    if (!cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate")) return tu_finish();
    tu_rng rng;
    tu_seed(&rng, 604);
    check_reference_u8(&rng);
    const int sizes[][2] = { { 1, 1 }, { 1, 29 }, { 31, 1 }, { 7, 5 }, { 37, 23 }, { 70, 67 } };
    const int radii[] = { 1, 2, 3, 7, 15 };
    const ipk_dtype types[] = { IPK_U8, IPK_U16, IPK_F32 };
    int k = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int ti = 0; ti < 3; ti++)
            for (int c = 1; c <= 4; c++)
                for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
                    for (int r = 0; r < 5; r++, k++)
                        check_case(sizes[i][0], sizes[i][1], c, types[ti], radii[r], (ipk_border)b, k & 1, s, &rng);
    /* the 1-channel u8 running-sum path (radii 1..15, every border): tiles inside and across
     * the edges, odd widths and heights, pitches that are not a multiple of 2 or 4 */
    const int fast_sizes[][2] = { { 1031, 131 }, { 256, 64 }, { 129, 65 }, { 5, 70 }, { 133, 1 }, { 2, 3 },
                                  { 293, 197 } };
    for (int r = 1; r <= 15; r++)
        for (size_t i = 0; i < sizeof fast_sizes / sizeof fast_sizes[0]; i++, k++)
            check_case(fast_sizes[i][0], fast_sizes[i][1], 1, IPK_U8, r, (ipk_border)(k % 4), k & 1, s, &rng);
    /* radius 1 without shrink takes the 3x3 strip path: strips of 16 columns whole or cut by the
     * right edge, 8-row strips cut by the bottom, 16-byte loads (aligned source) or stores */
    const int strip_sizes[][2] = { { 2064, 37 }, { 16, 1 }, { 17, 2 }, { 4099, 18 }, { 1, 40 } };
    for (size_t i = 0; i < sizeof strip_sizes / sizeof strip_sizes[0]; i++)
        for (int b = IPK_REPLICATE; b < IPK_SHRINK; b++, k++)
            for (int a = 0; a < 2; a++)
                check_case(strip_sizes[i][0], strip_sizes[i][1], 1, IPK_U8, 1, (ipk_border)b, a, s, &rng);
    const int quick = tu_quick();
    check_case(quick ? 517 : 4097, quick ? 301 : 3001, 1, IPK_U8, 1, IPK_REFLECT101, 1, s, &rng);
    check_case(quick ? 517 : 4097, quick ? 101 : 1001, 1, IPK_U8, 15, IPK_REPLICATE, 1, s, &rng);
    check_case(quick ? 389 : 2053, quick ? 131 : 1031, 1, IPK_U8, 11, IPK_SHRINK, 0, s, &rng);
    check_case(1031, 517, 3, IPK_U8, 7, IPK_SHRINK, 0, s, &rng);
    check_case(301, 203, 4, IPK_U16, 40, IPK_REFLECT101, 1, s, &rng);
    check_case(301, 203, 2, IPK_F32, 40, IPK_ZERO, 0, s, &rng);
    check_tile_paths(quick, s, &rng);
    check_vec_path(quick, s, &rng);
    check_band_path(quick, s, &rng);

    ipk_img a = dev_alloc(8, 8, 1, IPK_U8, 1), b = dev_alloc(8, 8, 1, IPK_U16, 1);
    CHECK(ipk_mean_gpu(&a, &b, 1, IPK_ZERO, NULL, 0, s) == IPK_EINVAL, "dtype mismatch refused");
    dev_free(&a);
    dev_free(&b);
    cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
    return tu_finish();
}
