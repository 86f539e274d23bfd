#include <cuda_runtime.h>
#include "ipk.h"
#include "ipk_codec.h"

#define ADLER_MOD 65521u
#define ADLER_THREADS 256

/* One block per span; each thread sums a contiguous piece: s1 = sum of bytes, s2 = sum of each
 * byte times the number of bytes from it to the piece's end (itself included). Pieces join as
 * S1 += s1, S2 += s2 + s1 * (bytes after the piece), all mod 65521. */
__global__ void adler32_spans_kernel(const uint8_t *data, size_t total, size_t span, uint32_t *out)
{
    __shared__ unsigned long long part1[ADLER_THREADS], part2[ADLER_THREADS];
    size_t begin = (size_t)blockIdx.x * span;
    size_t len = total - begin < span ? total - begin : span;
    size_t piece = (len + ADLER_THREADS - 1) / ADLER_THREADS;
    size_t lo = threadIdx.x * piece < len ? threadIdx.x * piece : len;
    size_t hi = lo + piece < len ? lo + piece : len;
    unsigned long long s1 = 0, s2 = 0;
    for (size_t k = lo; k < hi; k++) {
        s1 += data[begin + k];
        s2 += s1;
        if (((k - lo) & 4095) == 4095) { s1 %= ADLER_MOD; s2 %= ADLER_MOD; }
    }
    /* s2 so far counts each byte once per byte from it to hi: the weight (hi - k) wanted */
    part1[threadIdx.x] = s1 % ADLER_MOD;
    part2[threadIdx.x] = s2 % ADLER_MOD;
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned long long a = 1, b = 0;
    for (int t = 0; t < ADLER_THREADS; t++) {
        size_t t_lo = t * piece < len ? t * piece : len;
        size_t t_hi = t_lo + piece < len ? t_lo + piece : len;
        unsigned long long n = (unsigned long long)(t_hi - t_lo) % ADLER_MOD;
        /* b over the bytes so far, then this piece: b += n * a + s2 (a before the piece) */
        b = (b + n * a + part2[t]) % ADLER_MOD;
        a = (a + part1[t]) % ADLER_MOD;
    }
    out[blockIdx.x] = (uint32_t)((b << 16) | a);
}

extern "C" int ipk_adler32_spans(const uint8_t *data, size_t total, size_t span, uint32_t *out, void *stream)
{
    if (!out || span == 0 || (total > 0 && !data)) return IPK_EINVAL;
    size_t n = total == 0 ? 0 : (total - 1) / span + 1;
    if (n == 0) return IPK_OK;
    if (n > 0x7fffffffu) return IPK_EINVAL;
    adler32_spans_kernel<<<(unsigned)n, ADLER_THREADS, 0, (cudaStream_t)stream>>>(data, total, span, out);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}
