/* The float vec kernel (kernels/gpu/convolve_vecf_block.cuh, IPK_GPU_VEC with float 3x3 weights) against the
 * CPU convolve, bit for bit: u8 outputs byte for byte, f32 outputs bit for bit (the sign of a zero
 * counts). Separable and direct kernels, every finish (divisor 1, powers of two, others; offsets
 * among them -0.0), negative weights and divisors, bench_gpu's FLOAT3, random kernels with fixed
 * seeds; 8-column groups, 256-column warps and row groups whole or cut, 1x1, 1xN, Nx1, prime widths
 * and 2053, 16-byte rows or not (pitches that are not the width, base pointers off by 1 to 7 bytes),
 * every border; and the cases it refuses (float 5x5 and 7x7 among them: their kernel measured slower
 * than the tiles and was deleted). Its 10-row shape (ipk_convolve_gpu_vec_shape 1) and narrow finish (ipk_convolve_gpu_vec_shape 2 to 6) on
 * every size, border and misalignment above, and the plans it refuses. */
#include <stdlib.h>
#include <string.h>
#include "gpu_testutil.h"
#include "ipk_bench.h"
#include "convolve_vecf.h"

typedef struct {
    const char *name;
    double w[9];
    double divisor, offset;
    int k;   /* side: 3 */
} float_case;

/* Whether the rows of two images hold the same bytes (f32: the same bits). */
static int same_bits(const ipk_img *a, const ipk_img *b)
{
    const size_t row = (size_t)a->width * esize(a->dtype);
    for (int y = 0; y < a->height; y++)
        if (memcmp(tu_px(a, 0, y, 0), tu_px(b, 0, y, 0), row)) return 0;
    return 1;
}

/* IPK_GPU_VEC against the CPU; shift > 0 views both images from element `shift` of wider ones,
 * so that no row is 8-byte aligned. shape > 0: ipk_convolve_gpu_vec_shape's shape instead. */
static void check_vecf(int w, int h, const float_case *k, ipk_border border, ipk_dtype out, int aligned16, int shift,
                       int shape, cudaStream_t s, tu_rng *rng)
{
    ipk_img wide = tu_img_u8_extremes(w + shift, h, rng);
    const ipk_img src = tu_img_view(&wide, shift, w);
    ipk_img cpu = tu_img_zeros(w, h, 1, out, 5 * (int)esize(out));
    ipk_conv_params p = { k->w, k->k, k->k, k->divisor, k->offset, border };
    CHECK(ipk_convolve_cpu(&src, &cpu, &p, 1) == IPK_OK, "cpu convolve %s", k->name);
    ipk_img dwide = dev_upload(&wide, aligned16), dout_wide = dev_alloc(w + shift, h, 1, out, aligned16);
    const ipk_img dsrc = tu_img_view(&dwide, shift, w), dout = tu_img_view(&dout_wide, shift, w);
    const int rc = shape ? ipk_convolve_gpu_vec_shape(&dsrc, &dout, &p, s, shape)
                         : ipk_convolve_gpu_path(&dsrc, &dout, &p, NULL, 0, s, IPK_GPU_VEC);
    if (gpu_finish_ok(rc, "ipk_convolve_gpu_path")) {
        ipk_img got_wide = dev_download(&dout_wide);
        const ipk_img got = tu_img_view(&got_wide, shift, w);
        CHECK(same_bits(&got, &cpu), "vec float %dx%d %s %dx%d border=%d out=%d aligned=%d shift=%d: max diff %g", k->k,
              k->k, k->name, w, h, (int)border, (int)out, aligned16, shift, tu_max_diff(&got, &cpu));
        tu_img_free(&got_wide);
    }
    dev_free(&dwide);
    dev_free(&dout_wide);
    tu_img_free(&wide);
    tu_img_free(&cpu);
}

/* Shapes 2 to 6 (bench_gpu's timing hook) take a direct plan of divisor 1 and offset 0 whose every
 * value fits the narrow finish (ipk_vecf_plan_conv_k says; 5 and 6 a scaled one too) and must be
 * exact there, and refuse the others. */
static void check_narrow_shape(int w, int h, const float_case *k, ipk_border border, int aligned16, int shift,
                               int shape, cudaStream_t s, tu_rng *rng)
{
    ipk_vecf_plan plan;
    CHECK(ipk_vecf_plan_conv_k(k->w, k->k, k->divisor, k->offset, &plan), "%s: no float plan", k->name);
    if (plan.narrow && plan.mode == IPK_VECF_DIRECT && plan.fin == IPK_VECF_FIN_ONE && (shape < 5 || plan.scaled)) {
        check_vecf(w, h, k, border, IPK_U8, aligned16, shift, shape, s, rng);
        return;
    }
    ipk_img a = dev_alloc(w, h, 1, IPK_U8, 1);
    ipk_conv_params p = { k->w, k->k, k->k, k->divisor, k->offset, border };
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &p, s, shape) == IPK_EINVAL, "shape %d: %s (not narrow) refused", shape,
          k->name);
    dev_free(&a);
}

/* The named kernels, then random ones (direct and separable, signed) with random finishes. */
static int make_cases(float_case *ks, int n_random, tu_rng *rng)
{
    static const float_case named[] = {
        { "FLOAT3", { 0 }, 1, 0, 3 },   /* bench_gpu's, filled below */
        { "fractional gaussian", { 0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625 }, 1, 0, 3 },
        { "half box /2 +0.5", { 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5 }, 2, 0.5, 3 },
        { "negative separable /-4 +7.25", { -0.3, 0.6, -0.9, 0.1, -0.2, 0.3, -0.5, 1.0, -1.5 }, -4, 7.25, 3 },
        { "sharpen-ish /3", { 0, -0.7, 0, -0.7, 3.9, -0.7, 0, -0.7, 0 }, 3, 0, 3 },
        { "all negative, offset -0.0", { -0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8, -0.9 }, 1, -0.0, 3 },
        { "all negative /-2, offset -0.0", { -0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8, -0.9 }, -2, -0.0, 3 },
        { "negative separable /0.3, offset -0.0", { -0.5, -1, -0.5, -1, -2, -1, -0.5, -1, -0.5 }, 0.3, -0.0, 3 },
        { "tiny divisor", { 0.11, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.91 }, 1e-3, -100, 3 },
    };
    const int n_named = (int)(sizeof named / sizeof named[0]);
    memcpy(ks, named, sizeof named);
    double sum = 0;
    for (int i = 0; i < 9; i++) sum += ks[0].w[i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
    for (int i = 0; i < 9; i++) ks[0].w[i] /= sum;
    static const double divisors[] = { 1, 2, -0.5, 3, 0.7, -9 }, offsets[] = { 0, 128, -3.5, 0.25 };
    for (int t = 0; t < n_random; t++) {
        float_case *k = &ks[n_named + t];
        k->k = 3;
        k->name = t % 3 == 0 ? "random separable" : "random direct";
        double col[3], row[3];
        for (int i = 0; i < 3; i++) {
            col[i] = (double)(tu_next(rng) % 2001) / 1000.0 - 1.0;
            row[i] = (double)(tu_next(rng) % 2001) / 997.0 - 1.0;
        }
        for (int i = 0; i < 9; i++)
            k->w[i] = t % 3 == 0 ? col[i / 3] * row[i % 3] : (double)(tu_next(rng) % 2001) / 613.0 - 1.6;
        k->divisor = divisors[tu_next(rng) % 6];
        k->offset = offsets[tu_next(rng) % 4];
    }
    return n_named + n_random;
}

static void check_refusals(const float_case *k, cudaStream_t s)
{
    ipk_img a = dev_alloc(64, 8, 1, IPK_U8, 1), f = dev_alloc(64, 8, 1, IPK_F32, 1);
    ipk_img u = dev_alloc(64, 8, 1, IPK_U16, 1), two = dev_alloc(64, 8, 2, IPK_U8, 1);
    static double w5[25], w9[81];
    for (int i = 0; i < 25; i++) w5[i] = 0.04 + 0.001 * i;
    for (int i = 0; i < 81; i++) w9[i] = 0.01 + 0.001 * i;
    ipk_conv_params p3 = { k->w, 3, 3, 1, 0, IPK_ZERO }, p5 = { w5, 5, 5, 1, 0, IPK_ZERO };
    ipk_conv_params p9 = { w9, 9, 9, 1, 0, IPK_ZERO }, p53 = { w5, 5, 3, 1, 0, IPK_ZERO };
    ipk_conv_params row3 = { k->w, 3, 1, 1, 0, IPK_ZERO }, col3 = { k->w, 1, 3, 1, 0, IPK_ZERO };
    CHECK(ipk_convolve_gpu_path(&a, &a, &p9, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: float 9x9 refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &p53, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: float 5x3 refused");
    CHECK(ipk_convolve_gpu_path(&u, &u, &p5, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: float 5x5 on u16 refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &p5, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: float 5x5 on u8 refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &p5, s, 1) == IPK_EINVAL, "shape 1: float 5x5 refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &row3, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: float 3x1 refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &col3, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: float 1x3 refused");
    CHECK(ipk_convolve_gpu_path(&u, &u, &p3, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: float on u16 refused");
    CHECK(ipk_convolve_gpu_path(&f, &f, &p3, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL, "vec: float on f32 refused");
    CHECK(ipk_convolve_gpu_path(&two, &two, &p3, NULL, 0, s, IPK_GPU_VEC) == IPK_EINVAL,
          "vec: float on 2 channels refused");
    CHECK(ipk_convolve_gpu_path(&a, &a, &p3, NULL, 0, s, IPK_GPU_VEC) == IPK_OK, "vec: float 3x3 on u8 taken");
    CHECK(ipk_convolve_gpu_path(&a, &f, &p3, NULL, 0, s, IPK_GPU_VEC) == IPK_OK, "vec: float 3x3 to f32 taken");
    static double big[9];   /* direct, divisor 1: the 10-row shape takes it, the narrow finish does not */
    for (int i = 0; i < 9; i++) big[i] = k->w[i] * 1000.0 + 0.5;
    ipk_conv_params pbig = { big, 3, 3, 1, 0, IPK_ZERO };
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &pbig, s, 1) == IPK_OK, "shape 1: large float 3x3 taken");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &pbig, s, 2) == IPK_EINVAL, "shape 2: large float 3x3 refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &pbig, s, 3) == IPK_EINVAL, "shape 3: large float 3x3 refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &pbig, s, 4) == IPK_EINVAL, "shape 4: large float 3x3 refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &pbig, s, 5) == IPK_EINVAL, "shape 5: large float 3x3 refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &pbig, s, 6) == IPK_EINVAL, "shape 6: large float 3x3 refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &p3, s, 7) == IPK_EINVAL, "shape 7 (the certified tile kernel): 3x3 refused");
    cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    dev_free(&a);
    dev_free(&f);
    dev_free(&u);
    dev_free(&two);
}

int main(void)
{
    need_gpu();
    const int quick = tu_quick();
    cudaStream_t s;
    if (!cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate")) return tu_finish();
    tu_rng rng;
    tu_seed(&rng, 4421);
    static float_case ks[32];
    const int n = make_cases(ks, 12, &rng);
    const int sizes[][2] = { { 1, 1 }, { 1, 33 }, { 29, 1 }, { 2, 3 }, { 7, 5 }, { 8, 9 }, { 9, 40 }, { 31, 7 },
                             { 97, 25 }, { 255, 13 }, { 256, 11 }, { 257, 3 }, { 1021, 23 }, { 2053, 13 },
                             { 37, 1000 } };
    int c = 0;
    for (int ki = 0; ki < n; ki++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++, c++) {
            if (quick && c % 3) continue;
            const ipk_dtype out = c % 2 ? IPK_F32 : IPK_U8, other = c % 2 ? IPK_U8 : IPK_F32;
            check_vecf(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)(c % 4), out, c / 2 % 2, 0, 0, s, &rng);
            check_vecf(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)((c + 1) % 4), other, 1, 1 + c % 7, 0, s, &rng);
        }
    for (int ki = 0; ki < 4; ki++)   /* FLOAT3 and the separable ones: every border on a large image */
        for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
            for (int o = 0; o < 2; o++)
                check_vecf(quick ? 1031 : 8192, quick ? 67 : 1031, &ks[ki], (ipk_border)b, o ? IPK_F32 : IPK_U8, 1,
                           0, 0, s, &rng);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i += 2)   /* FLOAT3 in the 10-row shape */
        check_vecf(sizes[i][0], sizes[i][1], &ks[0], (ipk_border)(i % 4), IPK_U8, 1, (int)i % 3, 1, s, &rng);
    for (int ki = 0; ki < n; ki += 5)   /* every fifth kernel: shapes 2 to 6 where the plan is narrow */
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (int shape = 2; shape <= 6; shape++)
                check_narrow_shape(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)((i + (size_t)shape) % 4),
                                   (int)i % 2, (int)(i + (size_t)shape) % 8, shape, s, &rng);
    for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
        for (int shape = 2; shape <= 6; shape++)
            check_vecf(quick ? 1031 : 8192, quick ? 67 : 1031, &ks[0], (ipk_border)b, IPK_U8, 1, 0, shape, s, &rng);
    check_refusals(&ks[0], s);
    cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
    return tu_finish();
}
