/* Box mean on the GPU, fused in one kernel per tile of MEAN_TILE_H rows x V values
 * (V = 64, or 48 for 3 channels, so a tile holds whole pixels):
 *   1. horizontal window sums of the TILE_H + 2r input rows the tile needs, each thread
 *      sliding a running sum over MEAN_SEG pixels of one channel, into shared memory;
 *   2. vertical running sums down MEAN_SEG-row segments of each value column, then the
 *      rounding floor((sum + n/2) / n).
 * Cost per pixel does not grow with the radius past the first window of each segment.
 * Integer sums are exact in uint32 ((2*100+1)^2 * 65535 < 2^32); float sums run in double,
 * the horizontal sums kept as float. Needs no scratch. */
#include <string.h>
#include "gpu_common.cuh"

#define MEAN_TILE_H 64
#define MEAN_SEG 16
#define MEAN_VSEGS (MEAN_TILE_H / MEAN_SEG)

template <typename T> struct mean_acc { typedef uint32_t sum; typedef uint32_t stored; };
template <> struct mean_acc<float> { typedef double sum; typedef float stored; };

template <typename T>
__device__ __forceinline__ typename mean_acc<T>::sum mean_px(const T *row, int x, int width, int border, int ch,
                                                             int channels)
{
    int xi = ipk_border_index(x, width, border);
    return xi < 0 ? 0 : (typename mean_acc<T>::sum)row[(size_t)xi * channels + ch];
}

/* Window sums along one input row for pixels px0 .. px0+MEAN_SEG-1 of channel ch. */
template <typename T>
__device__ void mean_row_segment(const T *row, int px0, int ch, int channels, int width, int radius, int border,
                                 typename mean_acc<T>::stored *out, int out_step)
{
    typedef typename mean_acc<T>::sum S;
    S sum = 0;
    for (int dx = -radius; dx <= radius; dx++) sum += mean_px<T>(row, px0 + dx, width, border, ch, channels);
    for (int k = 0; k < MEAN_SEG && px0 + k < width; k++) {
        if (k > 0)
            sum += mean_px<T>(row, px0 + k + radius, width, border, ch, channels) -
                   mean_px<T>(row, px0 + k - radius - 1, width, border, ch, channels);
        out[k * out_step] = (typename mean_acc<T>::stored)sum;
    }
}

__device__ __forceinline__ int mean_span(int i, int n, int radius)
{
    return min(i + radius, n - 1) - max(i - radius, 0) + 1;
}

template <typename T>
__device__ __forceinline__ T mean_round(typename mean_acc<T>::sum sum, uint32_t n)
{
    return (T)((sum + n / 2) / n);
}
template <> __device__ __forceinline__ float mean_round<float>(double sum, uint32_t n)
{
    return (float)(sum / (double)n);
}

template <typename T>
__global__ void mean_kernel(const void *src, ptrdiff_t ss, void *dst, ptrdiff_t ds, int width, int height,
                            int channels, int radius, int border)
{
    typedef typename mean_acc<T>::sum S;
    typedef typename mean_acc<T>::stored H;
    extern __shared__ __align__(16) unsigned char mean_smem[];
    H *hs = (H *)mean_smem;
    const int V = blockDim.x / MEAN_VSEGS;               /* values per tile row */
    const int rows = MEAN_TILE_H + 2 * radius;
    const int px_first = blockIdx.x * (V / channels);
    const int y0 = blockIdx.y * MEAN_TILE_H;

    const int items_per_row = V / MEAN_SEG;              /* segments: (group, channel) pairs */
    for (int item = threadIdx.x; item < rows * items_per_row; item += blockDim.x) {
        int ry = item / items_per_row, w = item % items_per_row;
        int g = w / channels, ch = w % channels;
        int px0 = px_first + g * MEAN_SEG;
        H *out = hs + (size_t)ry * V + g * MEAN_SEG * channels + ch;
        if (px0 >= width) continue;
        int yi = ipk_border_index(y0 - radius + ry, height, border);
        if (yi < 0) {
            for (int k = 0; k < MEAN_SEG; k++) out[k * channels] = 0;
            continue;
        }
        mean_row_segment<T>(ipk_crow<T>(src, ss, yi), px0, ch, channels, width, radius, border, out, channels);
    }
    __syncthreads();

    const int j = threadIdx.x % V, seg = threadIdx.x / V;
    const int x = px_first + j / channels;
    const int ty0 = seg * MEAN_SEG;
    if (x >= width || y0 + ty0 >= height) return;
    const uint32_t wx = border == IPK_SHRINK ? mean_span(x, width, radius) : 2 * radius + 1;
    S sum = 0;
    for (int r = 0; r <= 2 * radius; r++) sum += (S)hs[(size_t)(ty0 + r) * V + j];
    for (int k = 0; k < MEAN_SEG && y0 + ty0 + k < height; k++) {
        int ty = ty0 + k;
        if (k > 0) sum += (S)hs[(size_t)(ty + 2 * radius) * V + j] - (S)hs[(size_t)(ty - 1) * V + j];
        int y = y0 + ty;
        uint32_t wy = border == IPK_SHRINK ? mean_span(y, height, radius) : 2 * radius + 1;
        ipk_wrow<T>(dst, ds, y)[(size_t)x * channels + j % channels] = mean_round<T>(sum, wx * wy);
    }
}

static int mean_values_per_tile(int channels) { return channels == 3 ? 48 : 64; }

static size_t mean_smem_bytes(int radius, int channels)
{
    return (size_t)(MEAN_TILE_H + 2 * radius) * (size_t)mean_values_per_tile(channels) * 4;
}

template <typename T>
static int mean_launch(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, cudaStream_t s)
{
    const int V = mean_values_per_tile(src->channels);
    const size_t smem = mean_smem_bytes(radius, src->channels);
    if (smem > 48 * 1024 &&
        cudaFuncSetAttribute(mean_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
        return IPK_ECUDA;
    const long long values = (long long)src->width * src->channels;
    dim3 grid(ipk_div_up(values, V), ipk_div_up(src->height, MEAN_TILE_H));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    mean_kernel<T><<<grid, V * MEAN_VSEGS, smem, s>>>(src->data, src->stride, dst->data, dst->stride, src->width,
                                                     src->height, src->channels, radius, (int)border);
    return ipk_launch_status();
}

/* Fast path for 1-channel u8 with a constant window (not shrink) and 2r+1 <= RB_MAXK: the
 * register-blocked sums of gpu_common.cuh with unit weights (exact in float), rounded by a
 * multiply-shift: floor(x / n) = (x * M) >> p with M = ceil(2^p / n), p = 31 + ceil(log2 n),
 * exact for x < 2^31 since x * (M * n - 2^p) < 2^p. */
struct fin_mean {
    uint64_t mul;
    uint32_t half;
    int shift;
    __device__ __forceinline__ uint32_t operator()(float acc) const
    {
        const uint32_t sum = __float_as_uint(__fadd_rn(acc, RB_TWO23)) & 0x7fffffu;
        return (uint32_t)(((uint64_t)(sum + half) * mul) >> shift);
    }
};

template <int K>
static int mean_fast_k(const ipk_img *src, const ipk_img *dst, int border, cudaStream_t s)
{
    rb_weights w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < K; i++) w.row[i] = w.col[i] = 1.0f;
    const uint32_t n = K * K;
    int c = 0;
    while ((1u << c) < n) c++;
    fin_mean f;
    f.shift = 31 + c;
    f.mul = ((1ull << f.shift) + n - 1) / n;
    f.half = n / 2;
    return rb_launch<K, true, true, uint8_t>(src, dst, border, w, f, s);
}

static int mean_fast(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, cudaStream_t s)
{
    switch (radius) {
    case 1: return mean_fast_k<3>(src, dst, (int)border, s);
    case 2: return mean_fast_k<5>(src, dst, (int)border, s);
    case 3: return mean_fast_k<7>(src, dst, (int)border, s);
    default: return mean_fast_k<9>(src, dst, (int)border, s);
    }
}

extern "C" size_t ipk_mean_gpu_scratch(int width, int height, int channels, ipk_dtype dtype, int radius)
{
    (void)width; (void)height; (void)channels; (void)dtype; (void)radius;
    return 0;
}

extern "C" int ipk_mean_gpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                            void *scratch, size_t scratch_bytes, void *stream)
{
    (void)scratch; (void)scratch_bytes;
    if (!ipk_img_ok(src) || !ipk_img_ok(dst) || !ipk_same_shape(src, dst) || src->dtype != dst->dtype ||
        radius < 0 || radius > 100 || border < IPK_REPLICATE || border > IPK_SHRINK)
        return IPK_EINVAL;
    if (ipk_img_empty(src)) return IPK_OK;
    cudaStream_t s = (cudaStream_t)stream;
    if (src->dtype == IPK_U8 && src->channels == 1 && border != IPK_SHRINK && radius >= 1 && 2 * radius + 1 <= RB_MAXK)
        return mean_fast(src, dst, radius, border, s);
    if (src->dtype == IPK_U8) return mean_launch<uint8_t>(src, dst, radius, border, s);
    if (src->dtype == IPK_U16) return mean_launch<uint16_t>(src, dst, radius, border, s);
    return mean_launch<float>(src, dst, radius, border, s);
}
