/* The certified float kernels against the CPU convolve, byte for byte: the tensor-core kernel
 * (kernels/gpu/convolve_tc.cuh: what IPK_GPU_AUTO runs for a direct float 5x5 or 7x7 on 1-channel u8
 * with u8 output; shape 8 of ipk_convolve_gpu_vec_shape its other limb count), and the certified
 * tile kernel (convolve_cert.cuh: AUTO's at 9x9, and at 5x5 and 7x7 through shape 7). Over bench_gpu's
 * FLOAT5 and FLOAT7, random direct kernels with divisors (negative, powers of two and not) and
 * offsets (-0.0 among them), dyadic kernels whose sums land on half-integers (every such pixel goes
 * through the recompute in the CPU's order), cancelling weights, crowded ones (a few % of pixels
 * open: more than a warp's queue holds, so that lanes recompute on the spot); 1x1, 1xN, Nx1, prime widths, one
 * tile exactly and one more pixel, 1021x23 and larger, pitches that are not the width and base
 * pointers off by 1 to 3 bytes, every border. The cases it must leave to the exact kernels (the
 * plan has no threshold: convolve_cert.h) still give the CPU's bytes. */
#include <string.h>
#include "gpu_testutil.h"
#include "ipk_bench.h"
#include "convolve_cert.h"
#include "convolve_tc.h"
#include "convolve_separable.h"

typedef struct {
    const char *name;
    double w[81];
    double divisor, offset;
    int k;
} cert_case;

static int same_bytes(const ipk_img *a, const ipk_img *b)
{
    for (int y = 0; y < a->height; y++)
        if (memcmp(tu_px(a, 0, y, 0), tu_px(b, 0, y, 0), (size_t)a->width)) return 0;
    return 1;
}

/* Whether AUTO sends the case to a certified kernel (the dispatch rules of conv_tc_launch and
 * conv_cert_launch): tc 1 asks for the tensor-core kernel's, 0 for the tile kernel's. */
static int certified(const cert_case *c, int tc)
{
    float w[81], thr, col[9], row[9];
    for (int i = 0; i < c->k * c->k; i++) w[i] = (float)c->w[i];
    if (ipk_conv_weights_integral(c->w, c->k * c->k) || ipk_conv_split_float(c->w, c->k, c->k, col, row)) return 0;
    ipk_conv_tc_plan plan;
    return tc ? ipk_conv_tc_plan_make(w, c->k, (float)c->divisor, (float)c->offset, &plan)
              : ipk_conv_cert_threshold(w, c->k * c->k, (float)c->divisor, (float)c->offset, &thr);
}

/* Whether the tensor-core plan has a certificate with the limb count it does not choose (shape 8's). */
static int other_limbs_plan(const cert_case *c)
{
    float w[49];
    if (c->k > 7) return 0;
    for (int i = 0; i < c->k * c->k; i++) w[i] = (float)c->w[i];
    ipk_conv_tc_plan plan;
    if (!ipk_conv_tc_plan_make(w, c->k, (float)c->divisor, (float)c->offset, &plan)) return 0;
    return ipk_conv_tc_plan_limbs(w, c->k, (float)c->divisor, (float)c->offset, plan.limbs == 2 ? 3 : 2, &plan);
}

/* AUTO (shape 0), the certified tile kernel (shape 7) or the tensor-core kernel's other limb count (shape 8) against the CPU; shift > 0 views both
 * images from byte `shift` of wider ones. */
static void check_auto(int w, int h, const cert_case *k, ipk_border border, int aligned16, int shift, int shape,
                       cudaStream_t s, tu_rng *rng)
{
    ipk_img wide = shift % 2 ? tu_img_u8_extremes(w + shift, h, rng) : tu_img_random(w + shift, h, 1, IPK_U8, 5, rng);
    const ipk_img src = tu_img_view(&wide, shift, w);
    ipk_img cpu = tu_img_zeros(w, h, 1, IPK_U8, 5);
    ipk_conv_params p = { k->w, k->k, k->k, k->divisor, k->offset, border };
    CHECK(ipk_convolve_cpu(&src, &cpu, &p, 1) == IPK_OK, "cpu convolve %s", k->name);
    ipk_img dwide = dev_upload(&wide, aligned16), dout_wide = dev_alloc(w + shift, h, 1, IPK_U8, aligned16);
    const ipk_img dsrc = tu_img_view(&dwide, shift, w), dout = tu_img_view(&dout_wide, shift, w);
    const int rc = shape ? ipk_convolve_gpu_vec_shape(&dsrc, &dout, &p, s, shape)
                         : ipk_convolve_gpu_path(&dsrc, &dout, &p, NULL, 0, s, IPK_GPU_AUTO);
    if (shape == 8 && !other_limbs_plan(k)) {
        CHECK(rc == IPK_EINVAL, "shape 8 with no plan of the other limb count: refused (%d)", rc);
    } else if (gpu_finish_ok(rc, "ipk_convolve_gpu_path")) {
        ipk_img got_wide = dev_download(&dout_wide);
        const ipk_img got = tu_img_view(&got_wide, shift, w);
        CHECK(same_bytes(&got, &cpu), "%s float %dx%d %s /%g %+g, %dx%d border=%d aligned=%d shift=%d: max diff %g",
              shape == 7 ? "tile-certified" : shape == 8 ? "tc, other limbs" : "auto", k->k, k->k, k->name, k->divisor, k->offset, w, h, (int)border,
              aligned16, shift, tu_max_diff(&got, &cpu));
        tu_img_free(&got_wide);
    }
    dev_free(&dwide);
    dev_free(&dout_wide);
    tu_img_free(&wide);
    tu_img_free(&cpu);
}

static int make_cases(cert_case *ks, tu_rng *rng)
{
    static const double divisors[] = { 1, 2, -0.5, 3, 0.7, -9 }, offsets[] = { 0, 128, -3.5, -0.0, 0.25 };
    int n = 0;
    for (int k = 5; k <= 9; k += 2) {
        cert_case *c = &ks[n++];
        *c = (cert_case){ "bench", { 0 }, 1, 0, k };
        double sum = 0;
        for (int i = 0; i < k * k; i++) sum += c->w[i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
        for (int i = 0; i < k * k; i++) c->w[i] /= sum;
        c = &ks[n++];
        *c = (cert_case){ "dyadic", { 0 }, 1, 0, k };
        for (int i = 0; i < k * k; i++) c->w[i] = (i % 2 ? 0.03125 : 0.0625) * (i % 3 ? 1 : -0.5);
        c = &ks[n++];
        *c = (cert_case){ "cancelling", { 0 }, 7, 3.5, k };
        for (int i = 0; i < k * k; i++) c->w[i] = (i % 2 ? 1.7 : -1.3) + 0.001 * i;
        c = &ks[n++];   /* bounds near 0.02: a few % of pixels open, more than a warp's queue holds */
        *c = (cert_case){ "crowded", { 0 }, 1, 0, k };
        const double amp = k == 5 ? 6 : k == 7 ? 2 : 0.3;
        for (int i = 0; i < k * k; i++) c->w[i] = (i % 2 ? amp : -0.93 * amp) + 0.0007 * i;
        for (int t = 0; t < 4; t++) {
            c = &ks[n++];
            *c = (cert_case){ "random", { 0 }, divisors[tu_next(rng) % 6], offsets[tu_next(rng) % 5], k };
            for (int i = 0; i < k * k; i++) c->w[i] = (double)(tu_next(rng) % 2001) / 4000.0 - 0.2;
        }
    }
    return n;
}

/* Kernels AUTO must leave to the exact tiles (no threshold, or separable): still the CPU's bytes. */
static int make_uncertified(cert_case *ks)
{
    int n = 0;
    cert_case *c = &ks[n++];
    *c = (cert_case){ "large sums", { 0 }, 1, 0, 7 };
    for (int i = 0; i < 49; i++) c->w[i] = 2.51 + 0.01 * (i % 3);
    c = &ks[n++];
    *c = (cert_case){ "separable", { 0 }, 1, 0, 5 };
    for (int i = 0; i < 25; i++) c->w[i] = (1.0 + i % 5) * (1.0 + i / 5) / 225.5;
    c = &ks[n++];
    *c = (cert_case){ "tiny divisor", { 0 }, 1e-5, 0, 5 };
    for (int i = 0; i < 25; i++) c->w[i] = 0.01 * (i % 7) - 0.02;
    return n;
}

int main(void)
{
    need_gpu();
    const int quick = tu_quick();
    cudaStream_t s;
    if (!cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate")) return tu_finish();
    tu_rng rng;
    tu_seed(&rng, 4423);
    static cert_case ks[32], un[4];
    const int n = make_cases(ks, &rng), nu = make_uncertified(un);
    for (int i = 0; i < n; i++) {
        CHECK(certified(&ks[i], 0), "%s %dx%d: the tile kernel's certificate", ks[i].name, ks[i].k, ks[i].k);
        CHECK(ks[i].k == 9 || certified(&ks[i], 1), "%s %dx%d: the tensor-core plan", ks[i].name, ks[i].k, ks[i].k);
    }
    for (int i = 0; i < nu; i++) CHECK(!certified(&un[i], 0) && !certified(&un[i], 1), "%s: left to the exact kernels", un[i].name);
    const int sizes[][2] = { { 1, 1 }, { 1, 33 }, { 29, 1 }, { 2, 3 }, { 7, 5 }, { 31, 7 }, { 97, 25 }, { 128, 64 },
                             { 129, 65 }, { 128, 128 }, { 131, 129 }, { 257, 130 }, { 1021, 23 }, { 37, 300 },
                             { 300, 37 } };
    int c = 0;
    for (int ki = 0; ki < n; ki++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++, c++) {
            if (quick && c % 3) continue;
            check_auto(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)(c % 4), c / 2 % 2, 0, 0, s, &rng);
            check_auto(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)((c + 1) % 4), 1, 1 + c % 3, 0, s, &rng);
            if (ks[ki].k < 9)
                check_auto(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)((c + 2) % 4), c / 4 % 2, c % 3, 7 + c % 2, s,
                           &rng);
        }
    for (int ki = 0; ki < nu; ki++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i += 3)
            check_auto(sizes[i][0], sizes[i][1], &un[ki], (ipk_border)(i % 4), 1, (int)i % 3, 0, s, &rng);
    for (int ki = 0; ki < 9; ki++)   /* bench, dyadic and crowded at 5, 7, 9 (ks[0..1, 3], [8..9, 11], ...): a large image */
        for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++) {
            const cert_case *k = &ks[ki / 3 * 8 + (ki % 3 == 2 ? 3 : ki % 3)];
            check_auto(quick ? 1031 : 4099, quick ? 531 : 781, k, (ipk_border)b, 1, b % 2, 0, s, &rng);
            for (int shape = 7; shape <= 8 && k->k < 9; shape++)
                check_auto(quick ? 1031 : 4099, quick ? 531 : 781, k, (ipk_border)b, 1, b % 2, shape, s, &rng);
        }
    ipk_img a = dev_alloc(64, 8, 1, IPK_U8, 1), f = dev_alloc(64, 8, 1, IPK_F32, 1);
    ipk_conv_params p5 = { ks[0].w, 5, 5, 1, 0, IPK_ZERO }, pint = { un[0].w, 3, 3, 1, 0, IPK_ZERO };
    static double ones[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    pint.weights = ones;
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &p5, s, 7) == IPK_OK, "shape 7: float 5x5 taken");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &f, &p5, s, 7) == IPK_EINVAL, "shape 7: f32 output refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &pint, s, 7) == IPK_EINVAL, "shape 7: integer weights refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &p5, s, 8) == IPK_OK, "shape 8: float 5x5 taken");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &pint, s, 8) == IPK_EINVAL, "shape 8: integer weights refused");
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &p5, s, 9) == IPK_EINVAL, "shape 9 refused");
    cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    dev_free(&a);
    dev_free(&f);
    cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
    return tu_finish();
}
