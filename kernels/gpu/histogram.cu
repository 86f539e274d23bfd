/* Histogram on the GPU: a persistent grid reads the image in 16-byte chunks and counts into
 * privatised shared-memory counters, merged into counts_dev with one atomic per non-zero
 * counter per block. 8-bit images count values (1 channel: 32 lane-interleaved copies per
 * block; more channels: 256 per channel, one copy per warp) and map values to bins at the merge, so any bin count stays in shared memory. 16-bit and float
 * images count bins in one block copy when channels*bins fits, else straight in global memory. */
#include "gpu_common.cuh"

#define HIST_THREADS 256
#define HIST_WARPS (HIST_THREADS / 32)
#define HIST_CHUNK 16
#define HIST_SHARED_BINS 8192   /* channels*bins counted in shared memory for u16/f32 */

__device__ __forceinline__ uint32_t hist_bin(uint16_t v, uint32_t bins)
{
    return (uint32_t)(((uint64_t)v * bins) >> 16);
}

#define HIST_NO_BIN 0xffffffffu

/* floor(v*bins) clamped to [0, bins-1], exact in double (24 + 17 bits) as on the CPU;
 * NaN is counted nowhere, as on the CPU. */
__device__ __forceinline__ uint32_t hist_bin(float v, uint32_t bins)
{
    if (isnan(v)) return HIST_NO_BIN;
    double b = floor((double)v * (double)bins);
    if (b < 0.0) return 0;
    if (b >= (double)bins) return bins - 1;
    return (uint32_t)b;
}

/* Chunk `idx` of the image seen as height rows of row_bytes bytes: its row and byte offset. */
struct hist_chunk {
    const uint8_t *p;
    int first_byte, n;
};

__device__ __forceinline__ hist_chunk chunk_at(const uint8_t *src, ptrdiff_t stride, long long idx,
                                               int chunks_per_row, int row_bytes)
{
    hist_chunk c;
    long long y = idx / chunks_per_row;
    c.first_byte = (int)(idx - y * chunks_per_row) * HIST_CHUNK;
    c.p = src + y * stride + c.first_byte;
    c.n = min(HIST_CHUNK, row_bytes - c.first_byte);
    return c;
}

/* A thread's place in the grid-stride walk over (row, chunk): advanced by adding the step's
 * whole rows and chunks, so no 64-bit division runs per chunk. */
struct hist_pos {
    int y, c, step_y, step_c;
};

__device__ __forceinline__ hist_pos hist_pos_at(long long idx, int cpr, long long step)
{
    hist_pos p;
    p.y = (int)(idx / cpr);
    p.c = (int)(idx - (long long)p.y * cpr);
    p.step_y = (int)(step / cpr);
    p.step_c = (int)(step - (long long)p.step_y * cpr);
    return p;
}

__device__ __forceinline__ void hist_advance(hist_pos *p, int cpr)
{
    p->y += p->step_y;
    p->c += p->step_c;
    if (p->c >= cpr) {
        p->c -= cpr;
        p->y++;
    }
}

__device__ __forceinline__ hist_chunk chunk_yc(const uint8_t *src, ptrdiff_t stride, const hist_pos &pos,
                                               int row_bytes)
{
    hist_chunk c;
    c.first_byte = pos.c * HIST_CHUNK;
    c.p = src + (ptrdiff_t)pos.y * stride + c.first_byte;
    c.n = min(HIST_CHUNK, row_bytes - c.first_byte);
    return c;
}

__device__ __forceinline__ uint4 load_chunk(const hist_chunk &c)
{
    if (c.n == HIST_CHUNK && ((uintptr_t)c.p % 16) == 0) return __ldg((const uint4 *)c.p);
    uint32_t w[4] = { 0, 0, 0, 0 };
    #pragma unroll
    for (int i = 0; i < HIST_CHUNK; i++)   /* unrolled: w stays in registers */
        if (i < c.n) w[i >> 2] |= (uint32_t)c.p[i] << ((i & 3) * 8);
    return make_uint4(w[0], w[1], w[2], w[3]);
}

template <int C>
__device__ __forceinline__ void count_word_u8(uint32_t *h, uint32_t word, int first, int n, int channel0)
{
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        int k = first + i;
        if (k < n) atomicAdd(&h[((channel0 + k) % C) * 256 + ((word >> (8 * i)) & 0xffu)], 1u);
    }
}

template <int C>
__device__ __forceinline__ void count_chunk_u8(uint32_t *h, const uint4 &q, const hist_chunk &c)
{
    const int ch0 = c.first_byte % C;
    count_word_u8<C>(h, q.x, 0, c.n, ch0);
    count_word_u8<C>(h, q.y, 4, c.n, ch0);
    count_word_u8<C>(h, q.z, 8, c.n, ch0);
    count_word_u8<C>(h, q.w, 12, c.n, ch0);
}

template <int C>
__global__ void __launch_bounds__(HIST_THREADS) hist_u8_kernel(const uint8_t *src, ptrdiff_t stride, int width,
                                                               int height, int bins, uint32_t *counts)
{
    __shared__ uint32_t sh[HIST_WARPS * C * 256];
    for (int i = threadIdx.x; i < HIST_WARPS * C * 256; i += HIST_THREADS) sh[i] = 0;
    __syncthreads();
    uint32_t *mine = sh + (threadIdx.x / 32) * C * 256;
    const int row_bytes = width * C;
    const int cpr = (row_bytes + HIST_CHUNK - 1) / HIST_CHUNK;
    const long long total = (long long)height * cpr, step = (long long)gridDim.x * HIST_THREADS;
    long long idx = blockIdx.x * (long long)HIST_THREADS + threadIdx.x;
    hist_pos pos = hist_pos_at(idx, cpr, step);
    /* two chunks loaded before either is counted, so that two loads are in flight */
    while (idx < total) {
        hist_chunk c0 = chunk_yc(src, stride, pos, row_bytes), c1 = c0;
        uint4 q0 = load_chunk(c0), q1 = make_uint4(0, 0, 0, 0);
        hist_advance(&pos, cpr);
        idx += step;
        const bool two = idx < total;
        if (two) {
            c1 = chunk_yc(src, stride, pos, row_bytes);
            q1 = load_chunk(c1);
            hist_advance(&pos, cpr);
            idx += step;
        }
        count_chunk_u8<C>(mine, q0, c0);
        if (two) count_chunk_u8<C>(mine, q1, c1);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < C * 256; i += HIST_THREADS) {
        uint32_t sum = 0;
        #pragma unroll
        for (int w = 0; w < HIST_WARPS; w++) sum += sh[w * C * 256 + i];
        int ch = i / 256, v = i % 256;
        if (sum) atomicAdd(&counts[(long long)ch * bins + (int)(((long long)v * bins) / 256)], sum);
    }
}

/* 1-channel u8: the block keeps 32 copies of the 256 counters, one per lane, interleaved so
 * that the counter of value v for lane l is word v*32 + l: the 32 atomics of a warp then fall
 * in 32 different banks whatever the values, and no two lanes of a warp share an address.
 * Warps of the block share the copies (their atomics meet only on equal lane and value). */
#define HIST1_THREADS 512
#define HIST1_BATCH 4   /* chunks loaded before any is counted, so that several loads are in flight */

template <bool FULL>
__device__ __forceinline__ void count_chunk_lane(uint32_t *lane_counters, const uint4 &q, int n)
{
    const uint32_t w[4] = { q.x, q.y, q.z, q.w };
    #pragma unroll
    for (int i = 0; i < HIST_CHUNK; i++)
        if (FULL || i < n) atomicAdd(&lane_counters[((w[i / 4] >> (8 * (i % 4))) & 0xffu) * 32], 1u);
}

__global__ void __launch_bounds__(HIST1_THREADS) hist_u8c1_kernel(const uint8_t *src, ptrdiff_t stride, int width,
                                                                  int height, int bins, uint32_t *counts)
{
    __shared__ uint32_t sh[256 * 32];
    for (int i = threadIdx.x; i < 256 * 32; i += HIST1_THREADS) sh[i] = 0;
    __syncthreads();
    uint32_t *lane_counters = sh + threadIdx.x % 32;
    const int cpr = (width + HIST_CHUNK - 1) / HIST_CHUNK;
    const long long total = (long long)height * cpr, step = (long long)gridDim.x * HIST1_THREADS;
    long long idx = blockIdx.x * (long long)HIST1_THREADS + threadIdx.x;
    hist_pos pos = hist_pos_at(idx, cpr, step);
    while (idx < total) {
        uint4 q[HIST1_BATCH];
        int n[HIST1_BATCH];
        #pragma unroll
        for (int k = 0; k < HIST1_BATCH; k++) {
            n[k] = 0;
            q[k] = make_uint4(0, 0, 0, 0);
            if (idx < total) {
                hist_chunk c = chunk_yc(src, stride, pos, width);
                q[k] = load_chunk(c);
                n[k] = c.n;
                hist_advance(&pos, cpr);
                idx += step;
            }
        }
        #pragma unroll
        for (int k = 0; k < HIST1_BATCH; k++) {
            if (n[k] == HIST_CHUNK) count_chunk_lane<true>(lane_counters, q[k], HIST_CHUNK);
            else count_chunk_lane<false>(lane_counters, q[k], n[k]);
        }
    }
    __syncthreads();
    /* value v sums its 32 copies starting at copy v%32, so a warp's reads hit 32 banks */
    for (int v = threadIdx.x; v < 256; v += HIST1_THREADS) {
        uint32_t sum = 0;
        for (int k = 0; k < 32; k++) sum += sh[v * 32 + ((k + v) & 31)];
        if (sum) atomicAdd(&counts[((long long)v * bins) / 256], sum);
    }
}

/* 16-bit and float: values of T, one shared copy of channels*bins counters, or global ones. */
template <typename T>
__device__ __forceinline__ void count_values(uint32_t *h, const T *v, int n, int ch0, int channels, uint32_t bins)
{
    for (int i = 0; i < n; i++) {
        uint32_t b = hist_bin(v[i], bins);
        if (b != HIST_NO_BIN) atomicAdd(&h[((ch0 + i) % channels) * bins + b], 1u);
    }
}

template <typename T, bool SHARED>
__global__ void __launch_bounds__(HIST_THREADS) hist_wide_kernel(const uint8_t *src, ptrdiff_t stride, int width,
                                                                 int height, int channels, int bins, uint32_t *counts)
{
    __shared__ uint32_t sh[SHARED ? HIST_SHARED_BINS : 1];
    const int n_counters = channels * bins;
    uint32_t *h = SHARED ? sh : counts;
    if (SHARED) {
        for (int i = threadIdx.x; i < n_counters; i += HIST_THREADS) sh[i] = 0;
        __syncthreads();
    }
    const int row_bytes = width * channels * (int)sizeof(T);
    const int cpr = (row_bytes + HIST_CHUNK - 1) / HIST_CHUNK;
    const long long total = (long long)height * cpr;
    for (long long idx = blockIdx.x * (long long)HIST_THREADS + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * HIST_THREADS) {
        hist_chunk c = chunk_at(src, stride, idx, cpr, row_bytes);
        uint4 q = load_chunk(c);
        T vals[HIST_CHUNK / sizeof(T)];
        memcpy(vals, &q, sizeof(vals));
        count_values<T>(h, vals, c.n / (int)sizeof(T), (c.first_byte / (int)sizeof(T)) % channels, channels,
                        (uint32_t)bins);
    }
    if (SHARED) {
        __syncthreads();
        for (int i = threadIdx.x; i < n_counters; i += HIST_THREADS)
            if (sh[i]) atomicAdd(&counts[i], sh[i]);
    }
}

static unsigned hist_grid(long long chunks)
{
    int dev = 0, sms = 132;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        sms = 132;
    long long want = (chunks + HIST_THREADS - 1) / HIST_THREADS;
    long long most = (long long)sms * 8;   /* 8 blocks of 256 fill an SM */
    return (unsigned)(want < most ? (want > 0 ? want : 1) : most);
}

/* Blocks for hist_u8c1_kernel: as many as fit on the device at once, fewer for a small image. The device's figure is cached as one atomic word
 * ((device + 1) << 32 | blocks), so concurrent callers see a whole pair or none. */
static unsigned hist1_grid(long long chunks)
{
    static unsigned long long cached = 0;
    int dev = 0, sms = 132, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) dev = 0;
    unsigned long long c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    unsigned most = (unsigned)(c & 0xffffffffu);
    if ((c >> 32) != (unsigned long long)dev + 1) {
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) sms = 132;
        cudaFuncSetAttribute(hist_u8c1_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared);
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hist_u8c1_kernel, HIST1_THREADS, 0) !=
                cudaSuccess || per_sm < 1)
            per_sm = 1;
        most = (unsigned)(sms * per_sm);
        __atomic_store_n(&cached, ((unsigned long long)dev + 1) << 32 | most, __ATOMIC_RELAXED);
    }
    long long want = (chunks + HIST1_THREADS - 1) / HIST1_THREADS;
    return want < (long long)most ? (unsigned)(want > 0 ? want : 1) : most;
}

template <typename T>
static void launch_wide(const ipk_img *src, int bins, uint32_t *counts, unsigned grid, cudaStream_t s)
{
    const uint8_t *p = (const uint8_t *)src->data;
    if ((long long)src->channels * bins <= HIST_SHARED_BINS)
        hist_wide_kernel<T, true><<<grid, HIST_THREADS, 0, s>>>(p, src->stride, src->width, src->height,
                                                                src->channels, bins, counts);
    else
        hist_wide_kernel<T, false><<<grid, HIST_THREADS, 0, s>>>(p, src->stride, src->width, src->height,
                                                                 src->channels, bins, counts);
}

static void launch_u8(const ipk_img *src, int bins, uint32_t *counts, unsigned grid, cudaStream_t s)
{
    const uint8_t *p = (const uint8_t *)src->data;
    if (src->channels == 1) {
        const long long chunks = (long long)src->height * ((src->width + HIST_CHUNK - 1) / HIST_CHUNK);
        hist_u8c1_kernel<<<hist1_grid(chunks), HIST1_THREADS, 0, s>>>(p, src->stride, src->width, src->height, bins,
                                                                       counts);
        return;
    }
    switch (src->channels) {
    case 2: hist_u8_kernel<2><<<grid, HIST_THREADS, 0, s>>>(p, src->stride, src->width, src->height, bins, counts); break;
    case 3: hist_u8_kernel<3><<<grid, HIST_THREADS, 0, s>>>(p, src->stride, src->width, src->height, bins, counts); break;
    default: hist_u8_kernel<4><<<grid, HIST_THREADS, 0, s>>>(p, src->stride, src->width, src->height, bins, counts); break;
    }
}

extern "C" int ipk_histogram_gpu(const ipk_img *src, int bins, uint32_t *counts_dev, void *stream)
{
    if (!ipk_img_ok(src) || bins < 1 || !counts_dev) return IPK_EINVAL;
    const long long row_bytes = (long long)src->width * src->channels * ipk_dtype_size(src->dtype);
    if (row_bytes > INT32_MAX - HIST_CHUNK || (long long)src->channels * bins > INT32_MAX) return IPK_ERANGE;
    cudaStream_t s = (cudaStream_t)stream;
    if (cudaMemsetAsync(counts_dev, 0, (size_t)src->channels * (size_t)bins * sizeof(uint32_t), s) != cudaSuccess)
        return IPK_ECUDA;
    if (ipk_img_empty(src)) return IPK_OK;
    unsigned grid = hist_grid((long long)src->height * ((row_bytes + HIST_CHUNK - 1) / HIST_CHUNK));
    if (src->dtype == IPK_U8) launch_u8(src, bins, counts_dev, grid, s);
    else if (src->dtype == IPK_U16) launch_wide<uint16_t>(src, bins, counts_dev, grid, s);
    else launch_wide<float>(src, bins, counts_dev, grid, s);
    return ipk_launch_status();
}
