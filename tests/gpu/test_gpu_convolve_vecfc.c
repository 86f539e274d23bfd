/* The certified float kernel (kernels/gpu/vecfc_block.cuh: what AUTO runs for direct float 5x5 and
 * 7x7 with u8 output) against the CPU convolve, byte for byte: through AUTO and through the timing
 * hook's shapes 7 and 8 (other rows a thread), for bench_gpu's FLOAT5 and FLOAT7, random direct
 * kernels with every finish kind, dyadic kernels whose sums land on half-integers (a queue of
 * uncertain pixels in most warps), 1x1, 1xN, Nx1, prime widths, 8-column groups and 256-column
 * warps whole or cut, row bands of 8 to 20 whole or cut, pitches that are not the width, base pointers off by 1 to 7 bytes, every
 * border, and a large image on each border; and the plans the hook refuses. */
#include <stdlib.h>
#include <string.h>
#include "gpu_testutil.h"
#include "ipk.h"
#include "conv_vecfc.h"

typedef struct {
    const char *name;
    double w[49];
    double divisor, offset;
    int k;
} float_case;

static int same_bytes(const ipk_img *a, const ipk_img *b)
{
    for (int y = 0; y < a->height; y++)
        if (memcmp(tu_px(a, 0, y, 0), tu_px(b, 0, y, 0), (size_t)a->width)) return 0;
    return 1;
}

/* AUTO (shape 0) or the hook's shape against the CPU; shift > 0 views both images from byte
 * `shift` of wider ones. */
static void check_one(int w, int h, const float_case *k, ipk_border border, int aligned16, int shift, int shape,
                      cudaStream_t s, tu_rng *rng)
{
    ipk_img wide = shift % 2 ? tu_img_u8_extremes(w + shift, h, rng) : tu_img_random(w + shift, h, 1, IPK_U8, 5, rng);
    ipk_img src = wide;
    src.data = (uint8_t *)wide.data + shift;
    src.width = w;
    ipk_img cpu = tu_img_zeros(w, h, 1, IPK_U8, 5);
    ipk_conv_params p = { k->w, k->k, k->k, k->divisor, k->offset, border };
    CHECK(ipk_convolve_cpu(&src, &cpu, &p, 1) == IPK_OK, "cpu convolve %s", k->name);
    ipk_img dwide = dev_upload(&wide, aligned16), dout_wide = dev_alloc(w + shift, h, 1, IPK_U8, aligned16);
    ipk_img dsrc = dwide, dout = dout_wide;
    dsrc.data = (uint8_t *)dwide.data + shift;
    dout.data = (uint8_t *)dout_wide.data + shift;
    dsrc.width = dout.width = w;
    const int rc = shape ? ipk_convolve_gpu_vec_shape(&dsrc, &dout, &p, s, shape)
                         : ipk_convolve_gpu_path(&dsrc, &dout, &p, NULL, 0, s, IPK_GPU_AUTO);
    if (gpu_finish_ok(rc, "certified convolve")) {
        ipk_img got_wide = dev_download(&dout_wide), got = got_wide;
        got.data = (uint8_t *)got_wide.data + shift;
        got.width = w;
        CHECK(same_bytes(&got, &cpu), "certified %dx%d %s /%g %+g %dx%d border=%d aligned=%d shift=%d shape=%d: max diff %g",
              k->k, k->k, k->name, k->divisor, k->offset, w, h, (int)border, aligned16, shift, shape,
              tu_max_diff(&got, &cpu));
        tu_img_free(&got_wide);
    }
    dev_free(&dwide);
    dev_free(&dout_wide);
    tu_img_free(&wide);
    tu_img_free(&cpu);
}

/* bench_gpu's FLOAT5 and FLOAT7, dyadic ones (exact sums, many ties), then random direct kernels
 * with random finishes; every one certified. */
static int make_cases(float_case *ks, int n_random, tu_rng *rng)
{
    static const double divisors[] = { 1, 2, -0.5, 3, 0.7, -9 }, offsets[] = { 0, 128, -3.5, -0.0 };
    int n = 0;
    for (int k = 5; k <= 7; k += 2) {
        float_case *c = &ks[n++];
        *c = (float_case){ k == 5 ? "FLOAT5" : "FLOAT7", { 0 }, 1, 0, k };
        double sum = 0;
        for (int i = 0; i < k * k; i++) sum += c->w[i] = ((2 * i) % 5 - 1) * 0.73 + 0.11 * (i % 3);
        for (int i = 0; i < k * k; i++) c->w[i] /= sum;
        c = &ks[n++];
        *c = (float_case){ "dyadic", { 0 }, 1, 0, k };
        for (int i = 0; i < k * k; i++) c->w[i] = (i % 2 ? 0.03125 : 0.0625) * (i % 3 ? 1 : -0.5);
    }
    for (int t = 0; t < n_random; t++) {
        float_case *c = &ks[n++];
        const int k = t % 2 ? 7 : 5;
        *c = (float_case){ "random direct", { 0 }, divisors[tu_next(rng) % 6], offsets[tu_next(rng) % 4], k };
        for (int i = 0; i < k * k; i++) c->w[i] = (double)(tu_next(rng) % 2001) / 4000.0 - 0.2;
    }
    for (int i = 0; i < n; i++) {
        ipk_vecf_plan p;
        CHECK(ipk_vecf_plan_conv_k(ks[i].w, ks[i].k, ks[i].divisor, ks[i].offset, &p) && ipk_vecfc_certify(&p),
              "case %d (%s) certified", i, ks[i].name);
    }
    return n;
}

static void check_refusals(cudaStream_t s)
{
    ipk_img a = dev_alloc(64, 8, 1, IPK_U8, 1);
    static double sep[25], big[49], w3[9];
    for (int i = 0; i < 25; i++) sep[i] = (1.0 + i % 5) * (1.0 + i / 5) / 225.5;
    for (int i = 0; i < 49; i++) big[i] = 2.51 + 0.01 * (i % 3);
    for (int i = 0; i < 9; i++) w3[i] = 0.1 + 0.01 * i;
    ipk_conv_params psep = { sep, 5, 5, 1, 0, IPK_ZERO }, pbig = { big, 7, 7, 1, 0, IPK_ZERO };
    ipk_conv_params p3 = { w3, 3, 3, 1, 0, IPK_ZERO };
    for (int shape = 7; shape <= 8; shape++) {
        CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &psep, s, shape) == IPK_EINVAL, "shape %d: separable refused", shape);
        CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &pbig, s, shape) == IPK_EINVAL, "shape %d: no certificate", shape);
        CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &p3, s, shape) == IPK_EINVAL, "shape %d: 3x3 refused", shape);
    }
    CHECK(ipk_convolve_gpu_vec_shape(&a, &a, &p3, s, 9) == IPK_EINVAL, "shape 9 refused");
    cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    dev_free(&a);
}

int main(void)
{
    need_gpu();
    const int quick = gpu_test_quick();
    cudaStream_t s;
    if (!cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate")) return tu_finish();
    tu_rng rng;
    tu_seed(&rng, 5501);
    static float_case ks[24];
    const int n = make_cases(ks, 12, &rng);
    const int sizes[][2] = { { 1, 1 }, { 1, 33 }, { 29, 1 }, { 2, 3 }, { 8, 17 }, { 9, 9 }, { 7, 40 }, { 31, 7 },
                             { 97, 25 }, { 255, 13 }, { 256, 11 }, { 257, 3 }, { 263, 70 }, { 1021, 23 },
                             { 2053, 13 }, { 37, 1000 } };
    int c = 0;
    for (int ki = 0; ki < n; ki++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++, c++) {
            if (quick && c % 3) continue;
            check_one(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)(c % 4), c / 2 % 2, 0, 0, s, &rng);
            check_one(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)((c + 1) % 4), 1, 1 + c % 7, 0, s, &rng);
            if (ks[ki].divisor == 1 && ks[ki].offset == 0)   /* the hook takes finish ONE only */
                check_one(sizes[i][0], sizes[i][1], &ks[ki], (ipk_border)((c + 2) % 4), 1, c % 4, 7 + c % 2, s, &rng);
        }
    for (int ki = 0; ki < 4; ki++)   /* FLOAT5, dyadic 5x5, FLOAT7, dyadic 7x7: every border on a large image */
        for (int b = IPK_REPLICATE; b <= IPK_SHRINK; b++)
            check_one(quick ? 1031 : 4099, quick ? 67 : 517, &ks[ki], (ipk_border)b, 1, 0, 0, s, &rng);
    check_refusals(s);
    cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
    return tu_finish();
}
