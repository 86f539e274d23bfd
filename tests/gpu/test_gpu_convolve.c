/* GPU convolve against the CPU kernel: bit-identical integer outputs, 1e-5 for f32 outputs,
 * for the named kernels and literal ones (5x5, 7x7, 1x7, 7x1, 31x31; separable and not;
 * integer and fractional weights), divisors, offsets, every border, dtype, channel count,
 * output same and f32, odd sizes and pitches; the tile and vec paths of
 * ipk_convolve_gpu_path one by one (the vec path's 3x3 and 5x5 16-bit kernels and its separable
 * kernel of radius 1 to 3). */
#include <math.h>
#include <stdlib.h>
#include "gpu_testutil.h"
#include "ipk_bench.h"

typedef struct {
    const char *name;
    int kw, kh;
    double w[31 * 31];
    double divisor, offset;
} kernel_case;

static void outer(kernel_case *k, const double *col, const double *row)
{
    for (int i = 0; i < k->kh; i++)
        for (int j = 0; j < k->kw; j++) k->w[i * k->kw + j] = col[i] * row[j];
}

static int make_kernels(kernel_case *ks, tu_rng *rng)
{
    int n = 0;
    static const double g3[] = { 1, 2, 1 }, g5[] = { 1, 4, 6, 4, 1 };
    static const double sharpen[] = { 0, -1, 0, -1, 5, -1, 0, -1, 0 }, lap[] = { 0, 1, 0, 1, -4, 1, 0, 1, 0 };
    static const double sobx[] = { -1, 0, 1, -2, 0, 2, -1, 0, 1 }, soby[] = { -1, -2, -1, 0, 0, 0, 1, 2, 1 };
    static const double emboss[] = { -2, -1, 0, -1, 1, 1, 0, 1, 2 };
    kernel_case *k;
    k = &ks[n++]; *k = (kernel_case){ "box3", 3, 3, { 0 }, 9, 0 };
    for (int i = 0; i < 9; i++) k->w[i] = 1;
    k = &ks[n++]; *k = (kernel_case){ "gaussian3", 3, 3, { 0 }, 16, 0 }; outer(k, g3, g3);
    k = &ks[n++]; *k = (kernel_case){ "gaussian5", 5, 5, { 0 }, 256, 0 }; outer(k, g5, g5);
    const double *named[] = { sharpen, lap, sobx, soby, emboss };
    const char *names[] = { "sharpen", "laplacian", "sobel-x", "sobel-y", "emboss" };
    for (int j = 0; j < 5; j++) {
        k = &ks[n++];
        *k = (kernel_case){ names[j], 3, 3, { 0 }, 1, j == 1 || j == 4 ? 128 : 0 };
        for (int i = 0; i < 9; i++) k->w[i] = named[j][i];
    }
    k = &ks[n++]; *k = (kernel_case){ "5x5 integer", 5, 5, { 0 }, 7, 3 };
    for (int i = 0; i < 25; i++) k->w[i] = (double)((int)(tu_next(rng) % 19) - 9);
    k = &ks[n++]; *k = (kernel_case){ "5x5 fractional", 5, 5, { 0 }, 1, 0.25 };
    for (int i = 0; i < 25; i++) k->w[i] = (double)(tu_next(rng) % 1000) / 997.0 - 0.3;
    double col7[7], row7[7];
    for (int i = 0; i < 7; i++) { col7[i] = 0.1 + 0.05 * i; row7[i] = 1.0 / (i + 1.5); }
    k = &ks[n++]; *k = (kernel_case){ "7x7 separable fractional", 7, 7, { 0 }, 2.5, 0 }; outer(k, col7, row7);
    k = &ks[n++]; *k = (kernel_case){ "7x7 integer", 7, 7, { 0 }, 49, 0 };
    for (int i = 0; i < 49; i++) k->w[i] = (double)(tu_next(rng) % 5);
    k = &ks[n++]; *k = (kernel_case){ "1x7 integer", 7, 1, { 0 }, 1, 0 };
    for (int i = 0; i < 7; i++) k->w[i] = i - 3;
    k = &ks[n++]; *k = (kernel_case){ "7x1 fractional", 1, 7, { 0 }, 1, -1.5 };
    for (int i = 0; i < 7; i++) k->w[i] = 0.125 * (i + 1);
    k = &ks[n++]; *k = (kernel_case){ "31x31 integer", 31, 31, { 0 }, 961 * 3, 0 };
    for (int i = 0; i < 961; i++) k->w[i] = (double)(tu_next(rng) % 7);
    double c31[31], r31[31];
    for (int i = 0; i < 31; i++) { c31[i] = 1 + (i % 5); r31[i] = 0.5 + 0.01 * i; }
    k = &ks[n++]; *k = (kernel_case){ "31x31 separable fractional", 31, 31, { 0 }, 500, 1 }; outer(k, c31, r31);
    k = &ks[n++]; *k = (kernel_case){ "3x3 big weights", 3, 3, { 0 }, 65536.0 * 3, 0 };
    for (int i = 0; i < 9; i++) k->w[i] = (i & 1) ? 65536 : -40000;
    return n;
}

static void check_case_path(int w, int h, int c, ipk_dtype t, ipk_dtype out, const kernel_case *k, ipk_border border,
                            int aligned16, ipk_gpu_path path, cudaStream_t s, tu_rng *rng)
{
    ipk_img src = tu_img_random(w, h, c, t, 3 * (int)esize(t), rng);
    ipk_img cpu = tu_img_zeros(w, h, c, out, 5 * (int)esize(out));
    ipk_conv_params p = { k->w, k->kw, k->kh, k->divisor, k->offset, border };
    CHECK(ipk_convolve_cpu(&src, &cpu, &p, 1) == IPK_OK, "cpu convolve %s", k->name);
    size_t scratch_bytes = ipk_convolve_gpu_scratch(w, h, c, t, k->kw, k->kh);
    void *scratch = NULL;
    if (scratch_bytes) cuda_ok(cudaMalloc(&scratch, scratch_bytes), "cudaMalloc scratch");
    ipk_img dsrc = dev_upload(&src, aligned16), ddst = dev_alloc(w, h, c, out, aligned16);
    if (gpu_finish_ok(ipk_convolve_gpu_path(&dsrc, &ddst, &p, scratch, scratch_bytes, s, path), "ipk_convolve_gpu")) {
        ipk_img got = dev_download(&ddst);
        double diff = tu_max_diff(&got, &cpu);
        CHECK(diff <= (out == IPK_F32 ? 1e-5 * fmax(1.0, fabs(k->offset)) : 0.0),
              "path %d %s %dx%d c=%d dtype=%d out=%d border=%d: max diff %g", (int)path, k->name, w, h, c, (int)t,
              (int)out, (int)border, diff);
        tu_img_free(&got);
    }
    cudaFree(scratch);
    dev_free(&dsrc);
    dev_free(&ddst);
    tu_img_free(&src);
    tu_img_free(&cpu);
}

static void check_case(int w, int h, int c, ipk_dtype t, ipk_dtype out, const kernel_case *k, ipk_border border,
                       int aligned16, cudaStream_t s, tu_rng *rng)
{
    check_case_path(w, h, c, t, out, k, border, aligned16, IPK_GPU_AUTO, s, rng);
}

/* The 1-channel u8 fast path (square kernels up to 9x9): every kind of weights it takes
 * (float and integer, split or not), power-of-two and other divisors, offsets, both outputs,
 * tiles inside and across the image edge, pitches that are not a multiple of 4; on the plain
 * call and the tile path. */
static void check_fast_path(int quick, cudaStream_t s, tu_rng *rng)
{
    static kernel_case k;
    const int sizes[][2] = { { 1031, 131 }, { 256, 64 }, { 129, 65 }, { 5, 70 }, { 1, 1 }, { 133, 1 } };
    const double divisors[] = { 1, 16, 7, -0.5 }, offsets[] = { 0, 3.25 };
    int n = 0;
    for (int kw = 3; kw <= 9; kw += 2)
        for (int kind = 0; kind < 4; kind++, n++) {
            double col[9], row[9];
            for (int i = 0; i < kw; i++) {
                col[i] = kind == 3 ? 1 + (int)(tu_next(rng) % 5) : (double)(tu_next(rng) % 1000) / 731.0 - 0.4;
                row[i] = kind == 3 ? (int)(tu_next(rng) % 9) - 3 : (double)(tu_next(rng) % 1000) / 613.0 - 0.2;
            }
            k.kw = k.kh = kw;
            k.name = kind == 0 ? "fast float" : kind == 1 ? "fast float split" : kind == 2 ? "fast int" : "fast int split";
            if (kind == 1 || kind == 3) outer(&k, col, row);
            for (int i = 0; kind == 0 && i < kw * kw; i++) k.w[i] = (double)(tu_next(rng) % 1000) / 517.0 - 0.8;
            for (int i = 0; kind == 2 && i < kw * kw; i++) k.w[i] = (double)((int)(tu_next(rng) % 19) - 9);
            k.divisor = divisors[n % 4];
            k.offset = offsets[(n / 4) % 2];
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                if (quick && i > 1) break;
                ipk_border b = (ipk_border)((n + (int)i) % 4);
                ipk_dtype out = (n + (int)i) % 3 == 0 ? IPK_F32 : IPK_U8;
                check_case(sizes[i][0], sizes[i][1], 1, IPK_U8, out, &k, b, (int)(i + n) & 1, s, rng);
                check_case_path(sizes[i][0], sizes[i][1], 1, IPK_U8, out, &k, b, (int)(i + n + 1) & 1, IPK_GPU_TILE, s,
                                rng);
            }
        }
}

/* A path value of this test only: ipk_convolve_gpu_vec_shape's shape 1 (bench_gpu's VEC_SHAPE(1)). */
#define VEC_SHAPE1 ((ipk_gpu_path)16)

/* One path of ipk_convolve_gpu_path against the CPU, 1-channel u8; shift > 0 views both images
 * from byte `shift` of a wider one, so that no row is 16-byte aligned. VEC_SHAPE1: the shape hook. */
static void check_path(int w, int h, const kernel_case *k, ipk_border border, int aligned16, int shift,
                       ipk_gpu_path path, cudaStream_t s, tu_rng *rng)
{
    ipk_img wide = tu_img_random(w + shift, h, 1, IPK_U8, 3, rng);
    for (int y = 0; y < h; y++)   /* runs of 0 and 255 drive the sums to their extremes */
        for (int x = 0; x < w + shift; x += 1 + (int)(tu_next(rng) % 9))
            *(uint8_t *)tu_px(&wide, x, y, 0) = (tu_next(rng) & 1) ? 255 : 0;
    const ipk_img src = tu_img_view(&wide, shift, w);
    ipk_img cpu = tu_img_zeros(w, h, 1, IPK_U8, 5);
    ipk_conv_params p = { k->w, k->kw, k->kh, k->divisor, k->offset, border };
    CHECK(ipk_convolve_cpu(&src, &cpu, &p, 1) == IPK_OK, "cpu convolve %s", k->name);
    ipk_img dwide = dev_upload(&wide, aligned16), ddst_wide = dev_alloc(w + shift, h, 1, IPK_U8, aligned16);
    const ipk_img dsrc = tu_img_view(&dwide, shift, w), ddst = tu_img_view(&ddst_wide, shift, w);
    const int rc = path >= VEC_SHAPE1 ? ipk_convolve_gpu_vec_shape(&dsrc, &ddst, &p, s, (int)path / VEC_SHAPE1)
                                      : ipk_convolve_gpu_path(&dsrc, &ddst, &p, NULL, 0, s, path);
    if (gpu_finish_ok(rc, "ipk_convolve_gpu_path")) {
        ipk_img got_wide = dev_download(&ddst_wide);
        const ipk_img got = tu_img_view(&got_wide, shift, w);
        CHECK(tu_max_diff(&got, &cpu) == 0, "path %d %s %dx%d border=%d aligned=%d shift=%d: max diff %g", (int)path,
              k->name, w, h, (int)border, aligned16, shift, tu_max_diff(&got, &cpu));
        tu_img_free(&got_wide);
    }
    dev_free(&dwide);
    dev_free(&ddst_wide);
    tu_img_free(&wide);
    tu_img_free(&cpu);
}

/* Each kernel of ks (but `skip`) on every size, the vec path: once 16-byte aligned or not, once from
 * a base pointer off by 1 to 15 bytes, borders in turn; every f32_every-th case also to f32 (0: none). */
static void check_vec_sizes(const kernel_case *ks, int n, int skip, const int (*sizes)[2], int n_sizes, int f32_every,
                            int quick, cudaStream_t s, tu_rng *rng)
{
    int c = 0;
    for (int ki = 0; ki < n; ki++) {
        if (ki == skip) continue;
        for (int i = 0; i < n_sizes; i++, c++) {
            if (quick && c % 3) continue;
            check_path(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)(c % 4), c & 1, 0, IPK_GPU_VEC, s, rng);
            check_path(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)((c + 1) % 4), 1, 1 + c % 15, IPK_GPU_VEC, s,
                       rng);
            if (f32_every && c % f32_every == 0)
                check_case_path(sizes[i][0], sizes[i][1], 1, IPK_U8, IPK_F32, &ks[ki], (ipk_border)((c + 2) % 4),
                                c & 2, IPK_GPU_VEC, s, rng);
        }
    }
}

/* The tile path on the 16-bit-lane cases (every finish of convolve_swar.h, separable and direct 3x3
 * and 5x5, separable 7x7, signed weights), which the deleted strip kernel took: sizes around 16
 * columns, warps and 2048-column blocks, tall images, 16-byte rows or not, every border; the
 * values 1 and 4, which named the strip and register kernels, refused. */
static void check_tile_paths(const kernel_case *named, int quick, cudaStream_t s, tu_rng *rng)
{
    static kernel_case ks[12];
    int n = 0;
    for (int i = 0; i < 9; i++) ks[n++] = named[i];   /* box3 .. emboss and "5x5 integer" */
    static const double t7[7] = { 1, 2, 3, 4, 3, 2, 1 };
    kernel_case *k = &ks[n++];
    *k = (kernel_case){ "7x7 separable /64", 7, 7, { 0 }, 64, 0 };
    outer(k, t7, t7);
    k = &ks[n++];
    *k = (kernel_case){ "3x3 /-8 +300", 3, 3, { 3, 5, 1, 0, 2, 0, 1, 0, 4 }, -8, 300 };
    k = &ks[n++];
    *k = (kernel_case){ "5x5 signed /2.5 -1.5", 5, 5, { 0 }, 2.5, -1.5 };
    for (int i = 0; i < 25; i++) k->w[i] = (double)((int)(tu_next(rng) % 11) - 5);
    const int sizes[][2] = { { 1, 1 }, { 1, 33 }, { 2, 1 }, { 15, 4 }, { 16, 16 }, { 17, 5 }, { 33, 2 },
                             { 511, 37 }, { 512, 19 }, { 513, 3 }, { 2048, 21 }, { 2049, 40 }, { 4111, 67 },
                             { 37, 1000 } };
    int c = 0;
    for (int ki = 0; ki < n; ki++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++, c++) {
            if (quick && c % 4) continue;
            check_path(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)(c % 4), c & 1, 0, IPK_GPU_TILE, s, rng);
        }
    ipk_img a = dev_alloc(64, 8, 1, IPK_U8, 1);
    ipk_conv_params g3 = { ks[1].w, 3, 3, 16, 0, IPK_ZERO };
    CHECK(ipk_convolve_gpu_path(&a, &a, &g3, NULL, 0, s, (ipk_gpu_path)1) == IPK_EINVAL, "strip value refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &g3, NULL, 0, s, (ipk_gpu_path)4) == IPK_EINVAL, "reg value refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &g3, NULL, 0, s, (ipk_gpu_path)7) == IPK_EINVAL, "unknown path refused");
    dev_free(&a);
}

/* The vec kernel: every mode of convolve_vec.h (unit, separable, direct) and every finish of
 * convolve_swar.h, signed weights; 16-column groups, 512-column warps and row groups whole or cut,
 * 1xN and Nx1, prime widths, 16-byte rows or not (pitches that are not the width, base pointers
 * off by 1 to 15 bytes), every border; and the cases it refuses. */
static void check_vec_path(const kernel_case *named, int quick, cudaStream_t s, tu_rng *rng)
{
    static kernel_case ks[16];
    int n = 0;
    for (int i = 0; i < 8; i++) ks[n++] = named[i];   /* box3, gaussian3, gaussian5 (check_vec5_path), sharpen .. */
    static const kernel_case extra[] = {
        { "box3 /8 +3", 3, 3, { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 8, 3 },
        { "separable (3 0 1)(1 2 5) /7", 3, 3, { 3, 6, 15, 0, 0, 0, 1, 2, 5 }, 7, 0 },
        { "3x3 /-8 +300", 3, 3, { 3, 5, 1, 0, 2, 0, 1, 0, 4 }, -8, 300 },
        { "3x3 odd /7 -20", 3, 3, { -1, 4, 2, 0, 1, 0, 2, 2, 2 }, 7, -20 },
        { "sobel-y /2 +0.5", 3, 3, { -1, -2, -1, 0, 0, 0, 1, 2, 1 }, 2, 0.5 },
        { "signed at the lane limit", 3, 3, { 14, -14, 14, -14, 16, -14, 14, -14, 14 }, 64, 128 },
        { "at the lane limit", 3, 3, { 28, 28, 28, 28, 32, 28, 28, 28, 28 }, 256, 0 },
    };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) ks[n++] = extra[i];
    const int sizes[][2] = { { 1, 1 }, { 1, 33 }, { 29, 1 }, { 2, 3 }, { 15, 4 }, { 16, 16 }, { 17, 5 }, { 31, 7 },
                             { 97, 25 }, { 511, 37 }, { 512, 19 }, { 513, 3 }, { 1021, 23 }, { 2053, 13 },
                             { 37, 1000 } };
    /* gaussian5 (ks[2]): check_vec5_path */
    check_vec_sizes(ks, n, 2, sizes, (int)(sizeof sizes / sizeof sizes[0]), 0, quick, s, rng);
    for (int ki = 0; ki < 4; ki++)   /* box3, gaussian3, sharpen: every border on a large image */
        for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
            if (ki != 2)
                check_path(quick ? 1031 : 8192, quick ? 67 : 1031, &ks[ki], (ipk_border)b, 1, 0, IPK_GPU_VEC, s, rng);
    ipk_img a = dev_alloc(64, 8, 1, IPK_U8, 1), f = dev_alloc(64, 8, 1, IPK_F32, 1);
    ipk_img u = dev_alloc(64, 8, 1, IPK_U16, 1), two = dev_alloc(64, 8, 2, IPK_U8, 1);
    ipk_conv_params g3 = { ks[1].w, 3, 3, 16, 0, IPK_ZERO };
    ipk_conv_params big = { named[16].w, 3, 3, 1, 0, IPK_ZERO };   /* "3x3 big weights" */
    static const double frac[9] = { 0.5, 1, 0.5, 1, 2, 1, 0.5, 1, 0.5 };
    static const double over[9] = { 29, 29, 29, 29, 30, 29, 29, 29, 29 };   /* not separable */
    ipk_conv_params fr = { frac, 3, 3, 8, 0, IPK_ZERO }, ov = { over, 3, 3, 256, 0, IPK_ZERO };
    ipk_conv_params row3 = { ks[0].w, 3, 1, 3, 0, IPK_ZERO };
    CHECK(ipk_convolve_gpu_path(&a, &a, &row3, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: 3x1 refused");
    ipk_conv_params sh = { ks[3].w, 3, 3, 1, 0, IPK_ZERO };   /* sharpen: not separable */
    CHECK(ipk_convolve_gpu_path(&a, &f, &sh, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL,
          "vec: f32 output of a direct integer kernel refused");
    CHECK(ipk_convolve_gpu_path(&u, &u, &g3, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: u16 refused");
    CHECK(ipk_convolve_gpu_path(&two, &two, &g3, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: 2 channels refused");
    CHECK(ipk_convolve_gpu_path(&u, &u, &fr, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL,
          "vec: fractional weights on u16 refused (u8 takes the float vec kernel)");
    CHECK(ipk_convolve_gpu_path(&a, &a, &ov, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: sums past 16 bits refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &big, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: big weights refused");
    dev_free(&a);
    dev_free(&f);
    dev_free(&u);
    dev_free(&two);
}

/* The vec kernel at 5x5: gaussian5 and the other separable and unit kernels with every finish
 * (each pair of mode and finish makes its own number of rows a thread), direct signed kernels
 * (one row a thread), sums at the lanes' limit; sizes around the groups, warps and row groups,
 * heights 1 to 5 (reflections of reflections), unaligned rows, every border; and what it refuses:
 * 7x7, 5x3, sums past the lanes. */
static void check_vec5_path(const kernel_case *named, int quick, cudaStream_t s, tu_rng *rng)
{
    static kernel_case ks[16];
    static const double b5[5] = { 1, 4, 6, 4, 1 }, ones[5] = { 1, 1, 1, 1, 1 };
    static const double ca[5] = { 3, 1, 0, 1, 2 }, ra[5] = { 1, 2, 0, 2, 1 };
    static const struct { const char *name; const double *col, *row; double divisor, offset; } sep[] = {
        { "box5 /16 +3", ones, ones, 16, 3 }, { "box5 /-8 +300", ones, ones, -8, 300 },
        { "box5 /25", ones, ones, 25, 0 }, { "box5 /2.5", ones, ones, 2.5, 0.5 },
        { "gaussian5 /-256 +255", b5, b5, -256, 255 }, { "separable (3 1 0 1 2)(1 2 0 2 1) /7 -5", ca, ra, 7, -5 },
        { "gaussian5 /100.5", b5, b5, 100.5, 0 },
    };
    int n = 0;
    ks[n++] = named[2];   /* gaussian5 */
    ks[n++] = named[8];   /* "5x5 integer": signed, /7 +3 */
    for (size_t i = 0; i < sizeof sep / sizeof sep[0]; i++) {
        ks[n] = (kernel_case){ sep[i].name, 5, 5, { 0 }, sep[i].divisor, sep[i].offset };
        outer(&ks[n++], sep[i].col, sep[i].row);
    }
    static const kernel_case direct[] = {
        { "laplacian of gaussian5 +128", 5, 5,
          { 0, 0, -1, 0, 0, 0, -1, -2, -1, 0, -1, -2, 16, -2, -1, 0, -1, -2, -1, 0, 0, 0, -1, 0, 0 }, 1, 128 },
        { "5x5 ties /-8 +300", 5, 5, { 3, 5, 1, 0, 2, 0, 1, 0, 4, 0, 1, 2, 3, 0, 0, 1, 0, 0, 2, 0, 5, 0, 1, 0, 1 }, -8,
          300 },
        { "5x5 sharpen /2.5", 5, 5,
          { -1, -1, -1, -1, -1, -1, 2, 2, 2, -1, -1, 2, 8, 2, -1, -1, 2, 2, 2, -1, -1, -1, -1, -1, -1 }, 2.5, 0 },
        { "5x5 at the lane limit", 5, 5, { 0 }, 256, 0 },
        { "5x5 signed at the lane limit", 5, 5, { 0 }, 64, 128 },
    };
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++) ks[n++] = direct[i];
    for (int i = 0; i < 25; i++) {
        ks[n - 2].w[i] = i == 12 ? 17 : 10;   /* sum 257: 257 * 255 = 65535 */
        ks[n - 1].w[i] = i == 12 ? 17 : i % 2 ? -10 : 10;
    }
    const int sizes[][2] = { { 1, 1 }, { 1, 33 }, { 29, 1 }, { 2, 2 }, { 3, 4 }, { 15, 5 }, { 16, 16 }, { 17, 5 },
                             { 18, 3 }, { 31, 7 }, { 97, 25 }, { 511, 37 }, { 512, 19 }, { 513, 3 }, { 514, 13 },
                             { 1021, 23 }, { 2053, 13 }, { 37, 1000 } };
    check_vec_sizes(ks, n, -1, sizes, (int)(sizeof sizes / sizeof sizes[0]), 0, quick, s, rng);
    const int large[] = { 0, 2, n - 5 };   /* gaussian5, box5 /16 +3, laplacian of gaussian5 */
    for (int li = 0; li < 3; li++)
        for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
            check_path(quick ? 1031 : 8192, quick ? 67 : 1031, &ks[large[li]], (ipk_border)b, 1, 0, IPK_GPU_VEC, s,
                       rng);
    ipk_img a = dev_alloc(64, 8, 1, IPK_U8, 1);
    static double g7[49], over[25];
    static const double b7[7] = { 1, 6, 15, 20, 15, 6, 1 };
    for (int i = 0; i < 49; i++) g7[i] = b7[i / 7] * b7[i % 7];
    for (int i = 0; i < 25; i++) over[i] = i == 12 ? 12 : 11;   /* not separable */
    ipk_conv_params k7 = { g7, 7, 7, 4096, 0, IPK_ZERO }, ov = { over, 5, 5, 256, 0, IPK_ZERO };
    ipk_img f = dev_alloc(64, 8, 1, IPK_F32, 1);
    g7[24] += 1;   /* not separable: no vec kernel takes it (check_vecsep_path has gaussian7 itself) */
    static double frac9w[81];
    for (int i = 0; i < 81; i++) frac9w[i] = 0.5 + 0.01 * i;
    ipk_conv_params k53 = { ks[0].w, 5, 3, 64, 0, IPK_ZERO }, frac = { frac9w, 9, 9, 1, 0.25, IPK_ZERO };
    ipk_conv_params frac5 = { frac9w, 5, 5, 1, 0.25, IPK_ZERO };   /* the float vec kernel is 3x3 only */
    CHECK(ipk_convolve_gpu_path(&a, &a, &k7, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: direct 7x7 refused");
    CHECK(ipk_convolve_gpu_path(&a, &f, &k7, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: direct 7x7 to f32 refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &k53, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: 5x3 refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &ov, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: 5x5 past 16 bits refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &frac, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: 9x9 fractional refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &frac5, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: 5x5 fractional refused");
    dev_free(&a);
    dev_free(&f);
}

/* The separable vec kernel (convolve_vecsep_block.cuh): gaussian7 and the separable integer kernels of radius
 * 1 to 3 past the 16-bit lanes, with every finish (SHIFT, ODD, DOUBLE; each its own rows a thread),
 * negated kernels, offsets; u8 output on 8-column groups, 256-column warps and row groups whole or
 * cut, 1xN and Nx1, prime widths, rows not 8-byte aligned (base pointers off by 1 to 15 bytes,
 * pitches that are not the width), every border; f32 output; what it refuses. */
static void check_vecsep_path(int quick, cudaStream_t s, tu_rng *rng)
{
    static kernel_case ks[16];
    static const double b7[7] = { 1, 6, 15, 20, 15, 6, 1 }, nb7[7] = { -1, -6, -15, -20, -15, -6, -1 };
    static const double b5[5] = { 1, 4, 6, 4, 1 }, w3[3] = { 40, 100, 40 }, ones7[7] = { 1, 1, 1, 1, 1, 1, 1 };
    static const double sk7[7] = { 0, 3, 0, 9, 1, 0, 2 }, c5[5] = { 300, 7, 0, 1, 90 };
    static const struct { const char *name; int k; const double *col, *row; double divisor, offset; } sep[] = {
        { "gaussian7 /4096", 7, b7, b7, 4096, 0 },
        { "gaussian7 /-4096 +200", 7, b7, b7, -4096, 200 },
        { "gaussian7 /4095", 7, b7, b7, 4095, 0 },
        { "gaussian7 /1000 +3", 7, b7, b7, 1000, 3 },
        { "negated gaussian7 /-4096", 7, nb7, b7, -4096, 0 },
        { "negated gaussian7 /4096 +255", 7, b7, nb7, 4096, 255 },
        { "box7 /49", 7, ones7, ones7, 49, 0 },
        { "skew x binomial /1024 -1", 7, sk7, b7, 1024, -1 },
        { "gaussian5 x 300 /76800", 5, c5, b5, 76800, 0 },
        { "5x5 /255 +7", 5, c5, b5, 255, 7 },
        { "wide 3x3 /32400", 3, w3, w3, 32400, 0 },
        { "wide 3x3 /32768", 3, w3, w3, 32768, 0 },
        { "wide 3x3 /9 -4", 3, w3, w3, 9, -4 },
    };
    int n = 0;
    for (size_t i = 0; i < sizeof sep / sizeof sep[0]; i++) {
        ks[n] = (kernel_case){ sep[i].name, sep[i].k, sep[i].k, { 0 }, sep[i].divisor, sep[i].offset };
        outer(&ks[n++], sep[i].col, sep[i].row);
    }
    const int sizes[][2] = { { 1, 1 }, { 1, 33 }, { 29, 1 }, { 2, 3 }, { 7, 4 }, { 8, 8 }, { 9, 5 }, { 31, 7 },
                             { 97, 25 }, { 255, 37 }, { 256, 19 }, { 257, 3 }, { 263, 13 }, { 1021, 23 },
                             { 2053, 13 }, { 37, 1000 } };
    check_vec_sizes(ks, n, -1, sizes, (int)(sizeof sizes / sizeof sizes[0]), 4, quick, s, rng);
    for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++) {   /* gaussian7, /4095, negated: large images */
        check_path(quick ? 1031 : 8192, quick ? 67 : 1031, &ks[0], (ipk_border)b, 1, 0, IPK_GPU_VEC, s, rng);
        check_path(quick ? 1031 : 4099, quick ? 67 : 517, &ks[2 + b % 3], (ipk_border)b, 1, 0, IPK_GPU_VEC, s, rng);
        check_case_path(quick ? 517 : 2053, quick ? 31 : 301, 1, IPK_U8, IPK_F32, &ks[b * 3], (ipk_border)b, 1,
                        IPK_GPU_VEC, s, rng);
    }
    for (int i = 0; i < 6; i++)   /* the 4-row shape of gaussian7 (ipk_convolve_gpu_vec_shape) */
        check_path(sizes[3 * i][0], sizes[3 * i][1], &ks[i % 2], (ipk_border)(i % 4), 1, i % 2 ? 3 + i : 0,
                   VEC_SHAPE1, s, rng);
    check_path(quick ? 1031 : 8192, quick ? 67 : 1031, &ks[0], IPK_REFLECT101, 1, 0, VEC_SHAPE1, s, rng);
    ipk_img a = dev_alloc(64, 8, 1, IPK_U8, 1), u = dev_alloc(64, 8, 1, IPK_U16, 1);
    static double wide_row[9], mixed[9];
    static const double wr[3] = { 1, 256, 1 }, mr[3] = { 1, -2, 1 };
    for (int i = 0; i < 9; i++) {
        wide_row[i] = w3[i / 3] / 20 * wr[i % 3];
        mixed[i] = 20 * b7[i / 3] * mr[i % 3];   /* past the 16-bit vec kernel's lanes */
    }
    ipk_conv_params g7u = { ks[0].w, 7, 7, 4096, 0, IPK_ZERO }, wide = { wide_row, 3, 3, 4096, 0, IPK_ZERO };
    ipk_conv_params mix = { mixed, 3, 3, 1, 128, IPK_ZERO };
    CHECK(ipk_convolve_gpu_path(&u, &u, &g7u, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vecsep: u16 refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &mix, s, 1) == IPK_EINVAL,
          "vec shape 1: a kernel it has no shape for refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &g7u, s, 2) == IPK_EINVAL, "vec shape 2 refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &wide, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL,
          "vecsep: row sums past 16 bits refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &mix, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL,
          "vecsep: a signed row factor refused");
    dev_free(&a);
    dev_free(&u);
}

int main(void)
{
    need_gpu();
    const int quick = tu_quick();
    cudaStream_t s;
    if (!cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate")) return tu_finish();
    tu_rng rng;
    tu_seed(&rng, 605);
    static kernel_case ks[32];
    const int nk = make_kernels(ks, &rng);
    const int sizes[][2] = { { 1, 1 }, { 1, 17 }, { 19, 1 }, { 7, 5 }, { 37, 23 } };
    const ipk_dtype types[] = { IPK_U8, IPK_U16, IPK_F32 };
    int n = 0;
    for (int ki = 0; ki < nk; ki++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (int ti = 0; ti < 3; ti++)
                for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++, n++) {
                    int c = 1 + n % 4;
                    ipk_dtype out = (n / 4) % 2 ? IPK_F32 : types[ti];
                    if (!quick || n % 5 == 0)   /* a fifth of the small cases under the sanitizers */
                        check_case(sizes[i][0], sizes[i][1], c, types[ti], out, &ks[ki], (ipk_border)b, n & 1, s, &rng);
                }
    check_fast_path(quick, s, &rng);
    check_tile_paths(ks, quick, s, &rng);
    check_vec_path(ks, quick, s, &rng);
    check_vec5_path(ks, quick, s, &rng);
    check_vecsep_path(quick, s, &rng);
    for (int ki = 0; ki < 3; ki++)
        check_case(quick ? 131 : 1031, quick ? 67 : 701, 1, IPK_U8, IPK_U8, &ks[ki], IPK_REFLECT101, 1, s, &rng);
    check_case(quick ? 517 : 4097, quick ? 31 : 301, 1, IPK_U8, IPK_U8, &ks[9], IPK_REPLICATE, 1, s, &rng);
    check_case(333, 129, 3, IPK_U8, IPK_F32, &ks[4], IPK_ZERO, 0, s, &rng);
    check_case(257, 130, 4, IPK_U16, IPK_U16, &ks[10], IPK_SHRINK, 1, s, &rng);
    check_case(129, 67, 2, IPK_F32, IPK_F32, &ks[14], IPK_REFLECT101, 0, s, &rng);

    ipk_img a = dev_alloc(8, 8, 1, IPK_U8, 1), b = dev_alloc(8, 8, 1, IPK_U16, 1);
    ipk_conv_params even = { ks[0].w, 4, 3, 1, 0, IPK_ZERO }, bad_out = { ks[0].w, 3, 3, 1, 0, IPK_ZERO };
    CHECK(ipk_convolve_gpu(&a, &a, &even, NULL, 0, s) == IPK_EINVAL, "even kernel width refused");
    CHECK(ipk_convolve_gpu(&a, &b, &bad_out, NULL, 0, s) == IPK_EINVAL, "u16 output of u8 input refused");
    dev_free(&a);
    dev_free(&b);
    cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
    return tu_finish();
}
