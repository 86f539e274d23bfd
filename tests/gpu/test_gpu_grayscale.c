/* GPU grayscale against the CPU kernel: bit-identical for u8/u16, 1e-5 for f32, on odd sizes,
 * padded host rows, aligned and unaligned device pitches, 3 and 4 channels, non-default weights. */
#include <stdlib.h>
#include "gpu_testutil.h"
#include "ipk.h"

static void check_case(int w, int h, int c, ipk_dtype t, int aligned16, const int32_t q[3], cudaStream_t s,
                       tu_rng *rng)
{
    ipk_img src = tu_img_random(w, h, c, t, 7 * (int)esize(t), rng);
    ipk_img cpu = tu_img_zeros(w, h, 1, t, 3 * (int)esize(t));
    CHECK(ipk_grayscale_cpu(&src, &cpu, q, 1) == IPK_OK, "cpu grayscale");
    ipk_img dsrc = dev_upload(&src, aligned16), ddst = dev_alloc(w, h, 1, t, aligned16);
    if (gpu_finish_ok(ipk_grayscale_gpu(&dsrc, &ddst, q, s), "ipk_grayscale_gpu")) {
        ipk_img got = dev_download(&ddst);
        double diff = tu_max_diff(&got, &cpu);
        CHECK(diff <= (t == IPK_F32 ? 1e-5 : 0.0), "%dx%d c=%d dtype=%d aligned=%d: max diff %g", w, h, c, (int)t,
              aligned16, diff);
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
    tu_seed(&rng, 601);
    const int32_t bt601[3] = { 9798, 19235, 3735 }, skewed[3] = { 20000, 2768, 10000 };
    const int sizes[][2] = { { 1, 1 }, { 1, 13 }, { 29, 1 }, { 7, 5 }, { 37, 23 }, { 16, 3 }, { 64, 9 }, { 131, 17 } };
    const ipk_dtype types[] = { IPK_U8, IPK_U16, IPK_F32 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int ti = 0; ti < 3; ti++)
            for (int c = 3; c <= 4; c++)
                for (int a = 0; a <= 1; a++)
                    check_case(sizes[i][0], sizes[i][1], c, types[ti], a, (i & 1) ? skewed : bt601, s, &rng);
    check_case(4097, 301, 3, IPK_U8, 1, bt601, s, &rng);
    check_case(4097, 301, 4, IPK_U8, 0, bt601, s, &rng);
    check_case(1023, 257, 3, IPK_U16, 1, skewed, s, &rng);

    /* Rejected arguments: wrong channel counts and dtype mismatch. */
    ipk_img a = dev_alloc(8, 8, 2, IPK_U8, 1), b = dev_alloc(8, 8, 1, IPK_U8, 1), f = dev_alloc(8, 8, 1, IPK_F32, 1);
    CHECK(ipk_grayscale_gpu(&a, &b, bt601, s) == IPK_EINVAL, "2 channels refused");
    a.channels = 3;
    a.width = 2;
    CHECK(ipk_grayscale_gpu(&a, &f, bt601, s) == IPK_EINVAL, "dtype or size mismatch refused");
    dev_free(&a);
    dev_free(&b);
    dev_free(&f);
    cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
    return tu_finish();
}
