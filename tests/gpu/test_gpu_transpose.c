/* GPU transpose against the CPU kernel (an exact copy, so identical bytes) for every dtype and
 * channel count, odd sizes, partial tiles, aligned and unaligned device pitches. */
#include <stdlib.h>
#include "gpu_testutil.h"
#include "ipk.h"

static void check_case(int w, int h, int c, ipk_dtype t, int aligned16, cudaStream_t s, tu_rng *rng)
{
    ipk_img src = tu_img_random(w, h, c, t, 5 * (int)esize(t), rng);
    ipk_img cpu = tu_img_zeros(h, w, c, t, 2 * (int)esize(t));
    CHECK(ipk_transpose_cpu(&src, &cpu, 1) == IPK_OK, "cpu transpose");
    /* The reference itself, checked by a plain loop on the small cases. */
    if ((long long)w * h <= 4096)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int k = 0; k < c; k++)
                    if (tu_get(&cpu, y, x, k) != tu_get(&src, x, y, k)) {
                        CHECK(0, "cpu transpose differs at %d,%d", x, y);
                        y = h, x = w, k = c;
                    }
    ipk_img dsrc = dev_upload(&src, aligned16), ddst = dev_alloc(h, w, c, t, aligned16);
    if (gpu_finish_ok(ipk_transpose_gpu(&dsrc, &ddst, s), "ipk_transpose_gpu")) {
        ipk_img got = dev_download(&ddst);
        double diff = tu_max_diff(&got, &cpu);
        CHECK(diff == 0.0, "%dx%d c=%d dtype=%d aligned=%d: max diff %g", w, h, c, (int)t, aligned16, diff);
        tu_img_free(&got);
    }
    dev_free(&dsrc);
    dev_free(&ddst);
    tu_img_free(&src);
    tu_img_free(&cpu);
}

int main(void)
{
    need_gpu();
    cudaStream_t s;
    if (!cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate")) return tu_finish();
    tu_rng rng;
    tu_seed(&rng, 602);
    const int sizes[][2] = { { 1, 1 }, { 1, 37 }, { 41, 1 }, { 7, 5 }, { 37, 23 }, { 64, 64 }, { 65, 63 }, { 128, 3 }, { 97, 130 } };
    const ipk_dtype types[] = { IPK_U8, IPK_U16, IPK_F32 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int ti = 0; ti < 3; ti++)
            for (int c = 1; c <= 4; c++)
                for (int a = 0; a <= 1; a++) check_case(sizes[i][0], sizes[i][1], c, types[ti], a, s, &rng);
    check_case(4097, 3001, 1, IPK_U8, 1, s, &rng);
    check_case(1031, 523, 1, IPK_U8, 0, s, &rng);
    check_case(777, 301, 3, IPK_U8, 1, s, &rng);
    check_case(513, 259, 4, IPK_F32, 1, s, &rng);

    ipk_img a = dev_alloc(8, 6, 1, IPK_U8, 1), b = dev_alloc(8, 6, 1, IPK_U8, 1);
    CHECK(ipk_transpose_gpu(&a, &b, s) == IPK_EINVAL, "unswapped shape refused");
    dev_free(&a);
    dev_free(&b);
    cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
    return tu_finish();
}
