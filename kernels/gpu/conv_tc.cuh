/* Certified float convolve on the tensor cores (conv_tc.h): a direct 5x5 or 7x7 float kernel, 1-channel
 * u8 in and out. For each kernel row ky and limb l, one mma.m16n8k32 (s8 weights x u8 pixels, exact
 * int32 sums) adds 16 output columns x 8 output rows: A is the limb's kernel row laid out as a band
 * (A[m][k] = q[l][ky][k - m - 4 + R], output column m, input column k from 4 left of the warp's 16
 * columns, so that B's words are aligned), B is 32 input bytes of 8 rows. A warp keeps its K x 3 A
 * fragments in registers and walks down 16 columns of the block's 128 x 128 outputs, 8 rows at a
 * time; the input tile and the outputs are in shared memory. The outputs whose value the
 * certificate leaves open are queued and recomputed from the tile in the CPU's order before the
 * block stores its outputs, 16 bytes at a time. */
#include "conv_tc.h"

#define TC_WARPS 8
#define TC_COLS (16 * TC_WARPS)
#define TC_ROWS 128
#define TC_TILE_W 160   /* input columns x0 - 16 .. x0 + 143 */
#define TC_PITCH 176    /* 44 words: the 8 rows x 4 words of a B fragment fall in 32 banks */
#define TC_QUEUE 1024

struct tc_params {
    int8_t q[IPK_CONV_TC_LIMBS][IPK_CONV_TC_MAXK * IPK_CONV_TC_MAXK];
    float w[IPK_CONV_TC_MAXK * IPK_CONV_TC_MAXK];   /* the float weights, for the CPU's order */
    float k0, div, inv, off, thr;   /* k0: ipk_conv_tc_value's; div, inv, off: the CPU's finish */
    int pow2;
};

__device__ __forceinline__ void tc_mma(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Word (f, r) of lane's A fragments into table[(f * 4 + r) * 32 + lane], f = ky * 3 + limb: bytes
 * b of register r hold A[m][k], m = g + 8 (r & 1), k = 4 tig + b + 16 (r >> 1) (g = lane / 4,
 * tig = lane % 4, the PTX fragment layout of m16n8k32 with 8-bit A): q[limb][ky][k - m - 4 + R],
 * 0 outside the row, read from band, the rows padded with TC_PAD zeros on the left. */
#define TC_PAD 20
#define TC_BAND 52
template <int K>
__device__ void tc_build_a(const int8_t *band, uint32_t *table)
{
    constexpr int R = K / 2, NF = K * IPK_CONV_TC_LIMBS;
    for (int i = threadIdx.x; i < NF * 128; i += blockDim.x) {
        const int f = i >> 7, r = (i >> 5) & 3, lane = i & 31;
        const int m = (lane >> 2) + 8 * (r & 1), k0 = 4 * (lane & 3) + 16 * (r >> 1);
        const uint8_t *b = (const uint8_t *)band + f * TC_BAND + k0 - m - 4 + R + TC_PAD;
        table[i] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    }
}

/* Input rows y0 - R .. y0 + TC_ROWS + R - 1, columns x0 - 16 .. x0 + 143, as bytes (border pixels
 * mapped, those the border drops 0): tc_load_words loads a thread's words, tc_store_words puts
 * them in the tile, so that other work can run while the loads are in flight. */
template <int K> struct tc_tile_words {
    static constexpr int ROWS = TC_ROWS + K - 1, WORDS = TC_TILE_W / 4;
    static constexpr int ITER = (ROWS * WORDS + TC_WARPS * 32 - 1) / (TC_WARPS * 32);
    uint32_t w[ITER];
};

template <int K>
__device__ __forceinline__ void tc_load_words(const uint8_t *src, ptrdiff_t ss, int width, int height, int border,
                                              int x0, int y0, tc_tile_words<K> &words)
{
    typedef tc_tile_words<K> T;
    constexpr int R = K / 2;
    const int xl = x0 - 16;
    const bool inside = xl >= 0 && xl + TC_TILE_W <= width && ((uintptr_t)src % 4) == 0 && (ss % 4) == 0;
    #pragma unroll
    for (int it = 0; it < T::ITER; it++) {
        const int i = threadIdx.x + it * TC_WARPS * 32, r = i / T::WORDS, wi = i - r * T::WORDS;
        const int yi = r < T::ROWS ? ipk_border_index(y0 - R + r, height, border) : -1;
        uint32_t word = 0;
        if (yi >= 0) {
            const uint8_t *row = src + (ptrdiff_t)yi * ss;
            if (inside) {
                word = __ldg((const uint32_t *)(row + xl + 4 * wi));
            } else {
                for (int b = 0; b < 4; b++) {
                    const int xi = ipk_border_index(xl + 4 * wi + b, width, border);
                    if (xi >= 0) word |= (uint32_t)row[xi] << (8 * b);
                }
            }
        }
        words.w[it] = word;
    }
}

template <int K>
__device__ __forceinline__ void tc_store_words(const tc_tile_words<K> &words, uint8_t *tile)
{
    typedef tc_tile_words<K> T;
    #pragma unroll
    for (int it = 0; it < T::ITER; it++) {
        const int i = threadIdx.x + it * TC_WARPS * 32, r = i / T::WORDS, wi = i - r * T::WORDS;
        if (r < T::ROWS) *(uint32_t *)(tile + r * TC_PITCH + 4 * wi) = words.w[it];
    }
}

/* Output (row, col) of the block in the CPU's order from the tile: every product and sum rounded. */
template <int K>
__device__ uint32_t tc_exact(const uint8_t *tile, int row, int col, const tc_params &p)
{
    constexpr int R = K / 2;
    const uint8_t *t = tile + row * TC_PITCH + col + 16 - R;
    float acc = 0.0f;
    #pragma unroll
    for (int ky = 0; ky < K; ky++)
        #pragma unroll
        for (int kx = 0; kx < K; kx++) acc = __fadd_rn(acc, __fmul_rn(p.w[ky * K + kx], (float)t[ky * TC_PITCH + kx]));
    return ipk_vecf_rint_u8(ipk_conv_cert_value(acc, p.div, p.inv, p.pow2, p.off)) & 0xffu;
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
__global__ void __launch_bounds__(TC_WARPS * 32, 2)
    tc_kernel(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height, int border,
              const __grid_constant__ tc_params p)
{
    constexpr int NF = K * IPK_CONV_TC_LIMBS, SCRATCH = TC_ROWS * TC_COLS / 4;
    static_assert(NF * 128 <= SCRATCH, "the A table fits the output buffer");
    static_assert(TC_ROWS / 8 % TT == 0, "whole groups of tiles");
    __shared__ __align__(16) uint8_t tile[(TC_ROWS + K - 1) * TC_PITCH];
    __shared__ __align__(16) uint32_t scratch[SCRATCH];   /* the A table, then the outputs */
    __shared__ uint32_t queue[TC_QUEUE];
    __shared__ int queued;
    __shared__ int8_t band[NF * TC_BAND];
    const int x0 = blockIdx.x * TC_COLS, y0 = blockIdx.y * TC_ROWS;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tig = lane & 3;

    if (threadIdx.x == 0) queued = 0;
    for (int i = threadIdx.x; i < NF * TC_BAND; i += blockDim.x) {   /* f = ky * 3 + limb */
        const int f = i / TC_BAND, kx = i % TC_BAND - TC_PAD;
        band[i] = kx >= 0 && kx < K ? p.q[f % IPK_CONV_TC_LIMBS][(f / IPK_CONV_TC_LIMBS) * K + kx] : 0;
    }
    tc_tile_words<K> words;
    tc_load_words<K>(src, ss, width, height, border, x0, y0, words);
    __syncthreads();
    tc_build_a<K>(band, scratch);   /* while the tile's loads are in flight */
    tc_store_words<K>(words, tile);
    __syncthreads();
    uint32_t a[NF][4];
    #pragma unroll
    for (int f = 0; f < NF; f++)
        #pragma unroll
        for (int r = 0; r < 4; r++) a[f][r] = scratch[(f * 4 + r) * 32 + lane];
    __syncthreads();

    /* TT tiles of 8 rows at a time, so that their K x 3 chains of mma overlap */
    uint8_t *out = (uint8_t *)scratch;
    const uint8_t *bcol = tile + 16 * warp + 12 + 4 * tig;
    for (int t = 0; t < TC_ROWS / 8; t += TT) {
        int acc[TT][IPK_CONV_TC_LIMBS][4] = {};
        #pragma unroll
        for (int ky = 0; ky < K; ky++)
            #pragma unroll
            for (int tt = 0; tt < TT; tt++) {
                const uint8_t *row = bcol + (8 * (t + tt) + g + ky) * TC_PITCH;
                const uint32_t b0 = *(const uint32_t *)row, b1 = *(const uint32_t *)(row + 16);
                #pragma unroll
                for (int l = 0; l < IPK_CONV_TC_LIMBS; l++) tc_mma(acc[tt][l], a[ky * IPK_CONV_TC_LIMBS + l], b0, b1);
            }
        #pragma unroll
        for (int tt = 0; tt < TT; tt++)
            #pragma unroll
            for (int i = 0; i < 4; i++) {
                const int col = 16 * warp + g + 8 * (i >> 1), row = 8 * (t + tt) + 2 * tig + (i & 1);
                const float v = ipk_conv_tc_value(acc[tt][0][i], acc[tt][1][i], acc[tt][2][i], p.k0, p.off);
                uint32_t uncertain;
                out[row * TC_COLS + col] = (uint8_t)ipk_conv_cert_u8(v, p.thr, &uncertain);
                if (uncertain && x0 + col < width && y0 + row < height) {
                    const int k = atomicAdd(&queued, 1);
                    if (k < TC_QUEUE) queue[k] = (uint32_t)(row << 8 | col);
                }
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
    tc_kernel<K, TT><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride, (uint8_t *)dst->data, dst->stride,
                                        src->width, src->height, border, p);
    return ipk_launch_status();
}
