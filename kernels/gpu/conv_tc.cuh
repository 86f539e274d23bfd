/* Certified float convolve on the tensor cores (conv_tc.h): a direct 5x5 or 7x7 float kernel, 1-channel
 * u8 in and out. For each kernel row ky and limb l, one mma.m16n8k16 (u8 pixels x s8 weights, exact
 * int32 sums) adds 16 output rows x 8 output columns: A is 16 input bytes of 16 rows (from 4 left of
 * the warp's 8 columns, so that its words are aligned), B the limb's kernel row laid out as a band
 * (B[k][n] = q[l][ky][k - n - 4 + R], input column k, output column n), which a warp keeps in K x 3
 * registers while it walks down its 8 columns of the block's 64 x 256 outputs, TT x 16 rows at a
 * time. The input tile and the outputs are in shared memory. The outputs whose value the certificate
 * leaves open are queued and recomputed from the tile in the CPU's order before the block stores
 * its outputs, 16 bytes at a time. */
#ifndef IPK_CONV_TC_CUH
#define IPK_CONV_TC_CUH
#include "conv_tc.h"
#include "rb_cert.cuh"

#define TC_WARPS 8
#define TC_COLS (8 * TC_WARPS)
#define TC_ROWS 256
#define TC_PITCH 80     /* input columns x0 - 8 .. x0 + 71; 20 words: A's 8 rows x 4 words fall in 32 banks */
#define TC_QUEUE 1024
#define TC_PAD 12       /* zeros left of each limb row in band */
#define TC_BAND 28

struct tc_params {
    int8_t q[IPK_CONV_TC_LIMBS][IPK_CONV_TC_MAXK * IPK_CONV_TC_MAXK];
    float w[IPK_CONV_TC_MAXK * IPK_CONV_TC_MAXK];   /* the float weights, for the CPU's order */
    float k0;          /* ipk_conv_tc_value's */
    rbc_finish fin;    /* the CPU's finish, and the threshold */
};

__device__ __forceinline__ void tc_mma(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t b)
{
    asm("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(b));
}

/* The lane's B fragment of band row f (f = ky * 3 + limb): byte i holds B[k][n], k = 4 tig + i,
 * n = g (g = lane / 4, tig = lane % 4, the PTX layout of m16n8k16 with 8-bit B): the 4 bytes from
 * band byte 4 tig - g - 4 + R + TC_PAD, two aligned words funnel-shifted. */
template <int K>
__device__ __forceinline__ uint32_t tc_b_fragment(const int8_t *band, int f, int lane)
{
    const int at = f * TC_BAND + 4 * (lane & 3) - (lane >> 2) - 4 + K / 2 + TC_PAD;
    const uint32_t *words = (const uint32_t *)band + (at >> 2);
    return __funnelshift_r(words[0], words[1], 8 * (at & 3));
}

/* Bytes x .. x + 7 of a row through the border, out of line: the tile load's slow path, kept out of
 * its unrolled fast path. */
static __device__ __noinline__ uint2 tc_border_chunk(const uint8_t *row, int x, int width, int border)
{
    uint32_t w[2] = { 0, 0 };
    for (int b = 0; b < 8; b++) {
        const int xi = ipk_border_index(x + b, width, border);
        if (xi >= 0) w[b / 4] |= (uint32_t)row[xi] << (8 * (b % 4));
    }
    return make_uint2(w[0], w[1]);
}

/* Input rows y0 - R .. y0 + TC_ROWS + R - 1, columns x0 - 8 .. x0 + 71, as bytes (border pixels mapped,
 * those the border drops 0), 8 bytes a load where the row allows. Every load is issued before any
 * store. */
template <int K>
__device__ void tc_load_tile(const uint8_t *src, ptrdiff_t ss, int width, int height, int border, int x0, int y0,
                             uint8_t *tile)
{
    constexpr int R = K / 2, ROWS = TC_ROWS + K - 1, CHUNKS = TC_PITCH / 8;
    constexpr int ITER = (ROWS * CHUNKS + TC_WARPS * 32 - 1) / (TC_WARPS * 32);
    const int xl = x0 - 8;
    const bool inside = xl >= 0 && xl + TC_PITCH <= width && ((uintptr_t)src % 8) == 0 && (ss % 8) == 0;
    uint2 chunks[ITER];
    #pragma unroll
    for (int it = 0; it < ITER; it++) {
        const int i = threadIdx.x + it * TC_WARPS * 32, r = i / CHUNKS, ci = i - r * CHUNKS, y = y0 - R + r;
        const int yi = r >= ROWS ? -1 : y >= 0 && y < height ? y : ipk_border_index(y, height, border);
        uint2 chunk = make_uint2(0, 0);
        if (yi >= 0) {
            const uint8_t *row = src + (ptrdiff_t)yi * ss;
            if (inside) {
                chunk = __ldg((const uint2 *)(row + xl) + ci);
            } else {
                chunk = tc_border_chunk(row, xl + 8 * ci, width, border);
            }
        }
        chunks[it] = chunk;
    }
    #pragma unroll
    for (int it = 0; it < ITER; it++) {
        const int i = threadIdx.x + it * TC_WARPS * 32;
        if (i < ROWS * CHUNKS) ((uint2 *)tile)[i] = chunks[it];
    }
}

/* Output (row, col) of the block in the CPU's order from the tile: every product and sum rounded. */
template <int K>
__device__ uint32_t tc_exact(const uint8_t *tile, int row, int col, const tc_params &p)
{
    constexpr int R = K / 2;
    const uint8_t *t = tile + row * TC_PITCH + col + 8 - R;
    float acc = 0.0f;
    #pragma unroll
    for (int ky = 0; ky < K; ky++)
        #pragma unroll
        for (int kx = 0; kx < K; kx++) acc = __fadd_rn(acc, __fmul_rn(p.w[ky * K + kx], (float)t[ky * TC_PITCH + kx]));
    return rbc_cpu_byte(acc, p.fin);
}

/* The block's outputs from shared memory: 16 bytes a store where the row allows. */
__device__ void tc_store(uint8_t *dst, ptrdiff_t ds, int width, int height, int x0, int y0, const uint8_t *out)
{
    for (int i = threadIdx.x; i < TC_ROWS * (TC_COLS / 16); i += blockDim.x) {
        const int r = i / (TC_COLS / 16), c = 16 * (i % (TC_COLS / 16)), y = y0 + r, x = x0 + c;
        if (y >= height || x >= width) continue;
        uint8_t *d = dst + (ptrdiff_t)y * ds + x;
        const uint8_t *o = out + r * TC_COLS + c;
        if (x + 16 <= width && ((uintptr_t)d % 16) == 0) {
            *(uint4 *)d = *(const uint4 *)o;
        } else {
            const int n = min(16, width - x);
            for (int j = 0; j < n; j++) d[j] = o[j];
        }
    }
}

template <int K, int TT>
__global__ void __launch_bounds__(TC_WARPS * 32, 4)
    tc_kernel(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height, int border,
              const __grid_constant__ tc_params p)
{
    constexpr int NF = K * IPK_CONV_TC_LIMBS;
    static_assert(TC_ROWS / 16 % TT == 0, "whole groups of tiles");
    __shared__ __align__(16) uint8_t tile[(TC_ROWS + K - 1) * TC_PITCH];
    __shared__ __align__(16) uint8_t out[TC_ROWS * TC_COLS];
    __shared__ uint32_t queue[TC_QUEUE];
    __shared__ int queued;
    __shared__ __align__(4) int8_t band[NF * TC_BAND + 4];
    const int x0 = blockIdx.x * TC_COLS, y0 = blockIdx.y * TC_ROWS;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tig = lane & 3;

    if (threadIdx.x == 0) queued = 0;
    for (int i = threadIdx.x; i < NF * TC_BAND; i += blockDim.x) {   /* f = ky * 3 + limb */
        const int f = i / TC_BAND, kx = i % TC_BAND - TC_PAD;
        band[i] = kx >= 0 && kx < K ? p.q[f % IPK_CONV_TC_LIMBS][(f / IPK_CONV_TC_LIMBS) * K + kx] : 0;
    }
    tc_load_tile<K>(src, ss, width, height, border, x0, y0, tile);
    __syncthreads();
    uint32_t b[NF];
    #pragma unroll
    for (int f = 0; f < NF; f++) b[f] = tc_b_fragment<K>(band, f, lane);

    const uint8_t *acol = tile + 8 * warp + 4 + 4 * tig;
    uint8_t *obase = out + g * TC_COLS + 8 * warp + 2 * tig;
    for (int t = 0; t < TC_ROWS / 16; t += TT) {
        int acc[TT][IPK_CONV_TC_LIMBS][4] = {};
        #pragma unroll
        for (int ky = 0; ky < K; ky++)
            #pragma unroll
            for (int tt = 0; tt < TT; tt++) {
                const uint8_t *row = acol + (16 * (t + tt) + g + ky) * TC_PITCH;
                const uint32_t a0 = *(const uint32_t *)row, a1 = *(const uint32_t *)(row + 8 * TC_PITCH);
                #pragma unroll
                for (int l = 0; l < IPK_CONV_TC_LIMBS; l++) tc_mma(acc[tt][l], a0, a1, b[ky * IPK_CONV_TC_LIMBS + l]);
            }
        uint32_t open = 0;   /* bit 4 tt + i: output i of tile tt left open by the certificate */
        #pragma unroll
        for (int tt = 0; tt < TT; tt++)
            #pragma unroll
            for (int h = 0; h < 2; h++) {   /* rows g and g + 8: columns 2 tig and 2 tig + 1 */
                uint32_t byte[2];
                #pragma unroll
                for (int j = 0; j < 2; j++) {
                    const int i = 2 * h + j;
                    uint32_t uncertain;
                    const float v = ipk_conv_tc_value(acc[tt][0][i], acc[tt][1][i], acc[tt][2][i], p.k0, p.fin.off);
                    byte[j] = ipk_conv_cert_u8(v, p.fin.thr, &uncertain);
                    open |= uncertain << (4 * tt + i);
                }
                *(uint16_t *)(obase + (16 * (t + tt) + 8 * h) * TC_COLS) = (uint16_t)__byte_perm(byte[0], byte[1], 0x0040);
            }
        while (open) {   /* outside the image too: harmless, never stored */
            const int bit = __ffs(open) - 1, tt = bit >> 2, i = bit & 3;
            open &= open - 1;
            const int k = atomicAdd(&queued, 1);
            if (k < TC_QUEUE)
                queue[k] = (uint32_t)((16 * (t + tt) + g + 8 * (i >> 1)) << 8 | (8 * warp + 2 * tig + (i & 1)));
        }
    }
    __syncthreads();
    const int n = queued;
    if (n > TC_QUEUE) {   /* more open pixels than the queue holds: every pixel in the CPU's order */
        for (int i = threadIdx.x; i < TC_ROWS * TC_COLS; i += blockDim.x)
            out[i] = (uint8_t)tc_exact<K>(tile, i / TC_COLS, i % TC_COLS, p);
    } else {
        for (int i = threadIdx.x; i < n; i += blockDim.x)
            out[(queue[i] >> 8) * TC_COLS + (queue[i] & 255)] = (uint8_t)tc_exact<K>(tile, queue[i] >> 8, queue[i] & 255, p);
    }
    __syncthreads();
    tc_store(dst, ds, width, height, x0, y0, out);
}

template <int K, int TT>
static int tc_launch(const ipk_img *src, const ipk_img *dst, int border, const tc_params &p, cudaStream_t s)
{
    dim3 block(TC_WARPS * 32), grid(ipk_div_up(src->width, TC_COLS), ipk_div_up(src->height, TC_ROWS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    tc_kernel<K, TT><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride, (uint8_t *)dst->data,
                                            dst->stride, src->width, src->height, border, p);
    return ipk_launch_status();
}
#endif
