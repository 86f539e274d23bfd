/* GPU histogram against the CPU kernel: identical counts for every dtype, channel count and
 * several bin counts (shared and global counter paths), odd sizes and pitches; float images
 * with NaN, negative and >1 values. */
#include <math.h>
#include <stdlib.h>
#include "gpu_testutil.h"
#include "ipk.h"

static void add_float_specials(ipk_img *img)
{
    const float specials[] = { NAN, -0.5f, -0.0f, 0.0f, 1.0f, 1.5f, 0.99999994f, 0.5f };
    long long n = (long long)img->width * img->height * img->channels;
    for (long long i = 0; i < n && i < 64; i += 3) {
        int k = (int)(i % img->channels), x = (int)(i / img->channels % img->width),
            y = (int)(i / img->channels / img->width);
        *(float *)tu_px(img, x, y, k) = specials[(i / 3) % 8];
    }
}

static void check_img(const ipk_img *host, int bins, int aligned16, cudaStream_t s)
{
    const ipk_img src = *host;
    const int w = src.width, h = src.height, c = src.channels;
    const ipk_dtype t = src.dtype;
    size_t n = (size_t)c * bins;
    uint64_t *cpu = calloc(n, sizeof *cpu);
    uint32_t *got = calloc(n, sizeof *got), *dcounts = NULL;
    if (!cpu || !got) exit(2);
    CHECK(ipk_histogram_cpu(&src, bins, cpu, 1) == IPK_OK, "cpu histogram");
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += cpu[i];
    CHECK(total <= (uint64_t)w * h * c && (t == IPK_F32 || total == (uint64_t)w * h * c), "cpu total %llu",
          (unsigned long long)total);
    ipk_img dsrc = dev_upload(&src, aligned16);
    if (cuda_ok(cudaMalloc((void **)&dcounts, n * sizeof *dcounts), "cudaMalloc counts") &&
        cuda_ok(cudaMemset(dcounts, 0x5A, n * sizeof *dcounts), "poison counts") &&
        gpu_finish_ok(ipk_histogram_gpu(&dsrc, bins, dcounts, s), "ipk_histogram_gpu") &&
        cuda_ok(cudaMemcpy(got, dcounts, n * sizeof *got, cudaMemcpyDeviceToHost), "download counts")) {
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (got[i] != cpu[i] && bad++ == 0) first = i;
        CHECK(bad == 0, "%dx%d c=%d dtype=%d bins=%d aligned=%d: %zu counters differ, first %zu: %u vs %llu", w, h,
              c, (int)t, bins, aligned16, bad, first, got[first], (unsigned long long)cpu[first]);
    }
    cudaFree(dcounts);
    dev_free(&dsrc);
    free(cpu);
    free(got);
}

static void check_case(int w, int h, int c, ipk_dtype t, int bins, int aligned16, cudaStream_t s, tu_rng *rng)
{
    ipk_img src = tu_img_random(w, h, c, t, 9 * (int)esize(t), rng);
    if (t == IPK_F32) add_float_specials(&src);
    check_img(&src, bins, aligned16, s);
    tu_img_free(&src);
}

/* 1-channel u8 where nearly every pixel is `value`: every warp's atomics then meet on the same
 * lane copies, and each counter copy passes 2^16 in the full-size case. */
static void check_one_value(int w, int h, int value, int bins, int aligned16, cudaStream_t s, tu_rng *rng)
{
    ipk_img src = tu_img_random(w, h, 1, IPK_U8, 7, rng);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if ((x * 7 + y * 13) % 101 != 0) *(uint8_t *)tu_px(&src, x, y, 0) = (uint8_t)value;
    check_img(&src, bins, aligned16, s);
    tu_img_free(&src);
}

int main(void)
{
    need_gpu();
    cudaStream_t s;
    if (!cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate")) return tu_finish();
    tu_rng rng;
    tu_seed(&rng, 603);
    const int sizes[][2] = { { 1, 1 }, { 1, 19 }, { 23, 1 }, { 7, 5 }, { 37, 23 }, { 64, 4 } };
    const ipk_dtype types[] = { IPK_U8, IPK_U16, IPK_F32 };
    const int bins[] = { 1, 7, 256, 1000 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int ti = 0; ti < 3; ti++)
            for (int c = 1; c <= 4; c++)
                for (int b = 0; b < 4; b++)
                    check_case(sizes[i][0], sizes[i][1], c, types[ti], bins[b], (int)((i + b) & 1), s, &rng);
    const int quick = tu_quick();
    check_case(quick ? 517 : 4097, quick ? 301 : 3001, 1, IPK_U8, 256, 1, s, &rng);
    /* many chunks per thread in the grid-stride walk, and rows of 1 chunk */
    check_case(quick ? 331 : 2051, quick ? 257 : 2047, 1, IPK_U8, 256, 0, s, &rng);
    check_case(13, quick ? 3001 : 40001, 1, IPK_U8, 256, 1, s, &rng);
    check_one_value(quick ? 1031 : 8192, quick ? 517 : 4096, 200, 256, 1, s, &rng);
    check_one_value(quick ? 1001 : 4099, quick ? 263 : 2053, 0, 7, 0, s, &rng);
    check_one_value(1, 5000, 255, 256, 0, s, &rng);
    check_case(1001, 301, 3, IPK_U8, 256, 0, s, &rng);
    check_case(517, 211, 4, IPK_U8, 65536, 1, s, &rng);
    check_case(517, 211, 1, IPK_U16, 65536, 1, s, &rng);
    check_case(333, 97, 3, IPK_U16, 4096, 0, s, &rng);
    check_case(333, 97, 2, IPK_F32, 5000, 1, s, &rng);

    ipk_img a = dev_alloc(8, 8, 1, IPK_U8, 1);
    uint32_t *dc = NULL;
    if (cuda_ok(cudaMalloc((void **)&dc, 64), "cudaMalloc"))
        CHECK(ipk_histogram_gpu(&a, 0, dc, s) == IPK_EINVAL, "0 bins refused");
    cudaFree(dc);
    dev_free(&a);
    cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
    return tu_finish();
}
