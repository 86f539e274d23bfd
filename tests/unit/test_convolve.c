#include <math.h>
#include <string.h>
#include "testutil.h"
#include "../../kernels/common/border.h"
#include "../../kernels/common/convolve_separable.h"

typedef struct { const char *name; int kw, kh; double w[49]; double divisor, offset; } kernel_case;

static const kernel_case kernels[] = {
    { "box3", 3, 3, { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 9, 0 },
    { "gaussian3", 3, 3, { 1, 2, 1, 2, 4, 2, 1, 2, 1 }, 16, 0 },
    { "gaussian5", 5, 5, { 1, 4, 6, 4, 1, 4, 16, 24, 16, 4, 6, 24, 36, 24, 6, 4, 16, 24, 16, 4, 1, 4, 6, 4, 1 }, 256, 0 },
    { "sharpen", 3, 3, { 0, -1, 0, -1, 5, -1, 0, -1, 0 }, 1, 0 },
    { "laplacian+128", 3, 3, { 0, 1, 0, 1, -4, 1, 0, 1, 0 }, 1, 128 },
    { "sobel-x/2", 3, 3, { -1, 0, 1, -2, 0, 2, -1, 0, 1 }, 2, 0.5 },
    { "sobel-y/-3", 3, 3, { -1, -2, -1, 0, 0, 0, 1, 2, 1 }, -3, 7 },
    { "emboss", 3, 3, { -2, -1, 0, -1, 1, 1, 0, 1, 2 }, 1, 0 },
    { "row 1x7", 7, 1, { 1, -2, 3, 9, 3, -2, 1 }, 13, 0 },
    { "col 7x1", 1, 7, { 2, 0, 5, 1, 5, 0, 2 }, 15, 0 },
    { "identity 1x1", 1, 1, { 3 }, 2, 0 },
    { "non-separable 5x3", 5, 3, { 1, 2, 3, 4, 5, -1, 0, 7, 0, -1, 2, 2, 2, 2, 9 }, 31, 0 },
    { "ties /4 -1", 3, 1, { 1, 2, -1 }, 4, -1 },
    { "ties /-8 +300", 1, 3, { 3, 5, 1 }, -8, 300 },
    { "odd /5 +300", 3, 3, { 1, 1, 1, 1, -1, 1, 1, 1, 1 }, 5, 300 },
    { "odd /7 -20", 3, 1, { -1, 4, 2 }, 7, -20 },
    { "big weights", 3, 1, { 65536, -65536, 40000 }, 40000, 0 },
    { "5x5 signed, 16-bit span", 5, 5, { 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9,
      -9, 9 }, 9, 100 },
    { "5x5 signed, 16-bit span, odd", 5, 5, { 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9, -9, 9,
      -9, 9, -9, 9 }, -7, 3 },
    { "5x5 just over 16 bits", 5, 5, { 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11,
      11, 11, 11, 11, 11 }, 275, 0 },
    { "1x1 one (u16: 16-bit span)", 1, 1, { 1 }, 1, 0 },
    { "3x1 signed (u16 just over)", 3, 1, { 1, -1, 0 }, 1, 5 },
    { "float separable", 3, 3, { 0.01, 0.02, 0.01, 0.02, 0.04, 0.02, 0.01, 0.02, 0.01 }, 0.16, 0.25 },
    { "float non-separable", 3, 3, { 0.1, -0.3, 0.7, 1.5, 0.0, 0.25, -0.125, 0.3, 0.2 }, 2.5, -1 },
    { "float 5x1", 5, 1, { 0.5, 1.5, 2.5, 1.5, 0.5 }, 6.5, 0 },
};

/* Independent reference in double: the window sum, / divisor + offset. */
static double ref_value(const ipk_img *img, int x, int y, int c, const kernel_case *k, int border)
{
    double sum = 0;
    for (int ky = 0; ky < k->kh; ky++)
        for (int kx = 0; kx < k->kw; kx++) {
            int sx = ipk_border_index(x + kx - k->kw / 2, img->width, border);
            int sy = ipk_border_index(y + ky - k->kh / 2, img->height, border);
            if (sx >= 0 && sy >= 0) sum += k->w[ky * k->kw + kx] * tu_get(img, sx, sy, c);
        }
    return sum / k->divisor + k->offset;
}

static double px_or_zero(const ipk_img *img, int x, int y, int c, int border)
{
    int sx = ipk_border_index(x, img->width, border), sy = ipk_border_index(y, img->height, border);
    return sx < 0 || sy < 0 ? 0.0 : tu_get(img, sx, sy, c);
}

/* The documented float order, one pixel at a time, for a bit-exact comparison. */
static float ref_float_order(const ipk_img *img, int x, int y, int c, const kernel_case *k, int border)
{
    float col[31], row[31], acc = 0.0f;
    const int rx = k->kw / 2, ry = k->kh / 2;
    if (ipk_conv_split_float(k->w, k->kw, k->kh, col, row)) {
        for (int ky = 0; ky < k->kh; ky++) {
            float t = 0.0f;
            for (int kx = 0; kx < k->kw; kx++) {
                float prod = row[kx] * (float)px_or_zero(img, x + kx - rx, y + ky - ry, c, border);
                t = t + prod;
            }
            float prod = col[ky] * t;
            acc = acc + prod;
        }
    } else {
        for (int ky = 0; ky < k->kh; ky++)
            for (int kx = 0; kx < k->kw; kx++) {
                float prod = (float)k->w[ky * k->kw + kx] * (float)px_or_zero(img, x + kx - rx, y + ky - ry, c, border);
                acc = acc + prod;
            }
    }
    float q = acc / (float)k->divisor;
    return q + (float)k->offset;
}

static double saturate(double v, ipk_dtype t)
{
    double max = t == IPK_U8 ? 255 : 65535, r = rint(v);
    return r < 0 ? 0 : r > max ? max : r;
}

static int is_integer_path(const kernel_case *k, ipk_dtype t)
{
    if (t == IPK_F32) return 0;
    for (int i = 0; i < k->kw * k->kh; i++)
        if (k->w[i] != floor(k->w[i])) return 0;
    return 1;
}

/* Expected output: exact for the integer path; the float path's documented order, exact. */
static double expected(const ipk_img *src, ipk_dtype out, int x, int y, int c, const kernel_case *k, int border)
{
    if (is_integer_path(k, src->dtype)) {
        double v = ref_value(src, x, y, c, k, border);
        return out == IPK_F32 ? (double)(float)v : saturate(v, out);
    }
    float v = ref_float_order(src, x, y, c, k, border);
    return out == IPK_F32 ? (double)v : saturate((double)v, out);
}

static int same_bytes(const ipk_img *a, const ipk_img *b)
{
    size_t row = (size_t)a->width * a->channels * (a->dtype == IPK_U8 ? 1 : a->dtype == IPK_U16 ? 2 : 4);
    for (int y = 0; y < a->height; y++)
        if (memcmp(tu_px(a, 0, y, 0), tu_px(b, 0, y, 0), row)) return 0;
    return 1;
}

static void check_case(int w, int h, int ch, ipk_dtype t, ipk_dtype out, const kernel_case *k, int border,
                       uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = tu_img_random(w, h, ch, t, 1 + (int)(seed % 7), &rng);
    ipk_img dst = tu_img_zeros(w, h, ch, out, 3), dst2 = tu_img_zeros(w, h, ch, out, 0);
    ipk_conv_params p = { k->w, k->kw, k->kh, k->divisor, k->offset, (ipk_border)border };
    int rc = ipk_convolve_cpu(&src, &dst, &p, 1), rc2 = ipk_convolve_cpu(&src, &dst2, &p, 3);
    CHECK(rc == IPK_OK && rc2 == IPK_OK, "%s: rc %d %d", k->name, rc, rc2);
    double worst = 0, worst_ref = 0, tol_ref = out == IPK_F32 ? 1e-3 * (t == IPK_F32 ? 1 : 256) : 1;
    int wx = 0, wy = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                double got = tu_get(&dst, x, y, c), d = fabs(got - expected(&src, out, x, y, c, k, border));
                if (!(d <= worst)) { worst = d; wx = x; wy = y; }
                double v = ref_value(&src, x, y, c, k, border);
                double dr = fabs(got - (out == IPK_F32 ? v : saturate(v, out)));
                if (!(dr <= worst_ref)) worst_ref = dr;
            }
    CHECK(worst == 0, "%dx%dx%d dtype %d -> %d, %s, border %d: diff %g at (%d,%d)", w, h, ch, t, out, k->name,
          border, worst, wx, wy);
    CHECK(worst_ref <= tol_ref, "%dx%dx%d dtype %d -> %d, %s, border %d: %g from the double reference", w, h,
          ch, t, out, k->name, border, worst_ref);
    CHECK(same_bytes(&dst, &dst2), "%dx%dx%d %s border %d: threads 1 vs 3 differ", w, h, ch, k->name, border);
    tu_img_free(&src);
    tu_img_free(&dst);
    tu_img_free(&dst2);
}

static void check_all(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 17 }, { 13, 1 }, { 7, 5 }, { 37, 23 }, { 101, 71 } };
    static const ipk_dtype dtypes[] = { IPK_U8, IPK_U16, IPK_F32 };
    const int n_kernels = (int)(sizeof kernels / sizeof kernels[0]);
    uint64_t seed = 11;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int ti = 0; ti < 3; ti++)
            for (int ki = 0; ki < n_kernels; ki++)
                for (int border = 0; border < 4; border++) {
                    int ch = 1 + (int)(seed % 4);
                    check_case(sizes[s][0], sizes[s][1], ch, dtypes[ti], dtypes[ti], &kernels[ki], border, seed++);
                    if (dtypes[ti] != IPK_F32 && (ki + border) % 2 == 0)
                        check_case(sizes[s][0], sizes[s][1], 5 - ch, dtypes[ti], IPK_F32, &kernels[ki], border, seed++);
                }
}

/* A 31x31 kernel, both separable and not, and a radius larger than the image. */
static void check_largest_kernels(void)
{
    double sep_w[31 * 31], dense_w[31 * 31], total = 0;
    tu_rng rng;
    tu_seed(&rng, 77);
    for (int i = 0; i < 31; i++)
        for (int j = 0; j < 31; j++) {
            sep_w[i * 31 + j] = (double)((i % 5) + 1) * (double)((j % 3) + 1);
            dense_w[i * 31 + j] = (double)(tu_next(&rng) % 9) - 3.0;
            total += sep_w[i * 31 + j];
        }
    for (int which = 0; which < 2; which++)
        for (int border = 0; border < 4; border++)
            for (int ti = 0; ti < 2; ti++) {
                ipk_dtype t = ti ? IPK_U16 : IPK_U8;
                tu_seed(&rng, 100 + border);
                ipk_img src = tu_img_random(45, 20, 2, t, 4, &rng), dst = tu_img_zeros(45, 20, 2, t, 0);
                ipk_conv_params p = { which ? dense_w : sep_w, 31, 31, which ? 50.0 : total, 0, (ipk_border)border };
                CHECK(ipk_convolve_cpu(&src, &dst, &p, 2) == IPK_OK, "rc");
                double worst = 0;
                for (int y = 0; y < 20; y++)
                    for (int x = 0; x < 45; x++)
                        for (int c = 0; c < 2; c++) {
                            long long s = 0;
                            for (int ky = 0; ky < 31; ky++)
                                for (int kx = 0; kx < 31; kx++)
                                    s += (long long)p.weights[ky * 31 + kx] *
                                         (long long)px_or_zero(&src, x + kx - 15, y + ky - 15, c, border);
                            double d = fabs(tu_get(&dst, x, y, c) - saturate((double)s / p.divisor, t));
                            if (d > worst) worst = d;
                        }
                CHECK(worst == 0, "%s dtype %d border %d: diff %g", which ? "31x31 dense" : "31x31 separable", t, border, worst);
                tu_img_free(&src);
                tu_img_free(&dst);
            }
}

static void check_bad_arguments(void)
{
    tu_rng rng;
    tu_seed(&rng, 3);
    ipk_img src = tu_img_random(8, 8, 1, IPK_U8, 0, &rng), dst = tu_img_zeros(8, 8, 1, IPK_U8, 0);
    ipk_img d16 = tu_img_zeros(8, 8, 1, IPK_U16, 0);
    double w[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    ipk_conv_params even = { w, 4, 3, 1, 0, IPK_ZERO }, zero_div = { w, 3, 3, 0, 0, IPK_ZERO };
    ipk_conv_params ok = { w, 3, 3, 9, 0, IPK_ZERO };
    CHECK(ipk_convolve_cpu(&src, &dst, &even, 1) == IPK_EINVAL, "even width");
    CHECK(ipk_convolve_cpu(&src, &dst, &zero_div, 1) == IPK_EINVAL, "divisor 0");
    CHECK(ipk_convolve_cpu(&src, &d16, &ok, 1) == IPK_EINVAL, "u8 -> u16");
    CHECK(ipk_convolve_cpu(&src, &dst, &ok, 1) == IPK_OK, "valid call");
    w[4] = NAN;
    CHECK(ipk_convolve_cpu(&src, &dst, &ok, 1) == IPK_EINVAL, "NaN weight");
    tu_img_free(&src);
    tu_img_free(&dst);
    tu_img_free(&d16);
}

int main(void)
{
    check_all();
    check_largest_kernels();
    check_bad_arguments();
    return tu_finish();
}
