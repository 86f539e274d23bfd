// threshold's CUDA path: a histogram and Otsu's level computed on the device (no copy back,
// no waiting), then one pass that writes the output. Everything is queued on the core's stream.
#include <cuda_runtime.h>
#include <stdio.h>
#include "threshold.h"

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxRowBlocks = 65535;

template <typename T>
__device__ const T *row_at(const void *base, ptrdiff_t stride, int y)
{
    return reinterpret_cast<const T *>(static_cast<const char *>(base) + static_cast<ptrdiff_t>(y) * stride);
}

template <typename T>
__global__ void count_values(const void *in, ptrdiff_t stride, int row_values, int height,
                             unsigned long long *hist)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= row_values) return;
    for (int y = blockIdx.y; y < height; y += gridDim.y) atomicAdd(&hist[row_at<T>(in, stride, y)[i]], 1ull);
}

// One thread: the scan is sequential by nature and short (256 or 65536 bins).
__global__ void pick_level(const unsigned long long *hist, int bins, unsigned long long total, long long *level)
{
    *level = threshold_otsu(hist, bins, total);
}

template <typename T>
__global__ void apply_level(const void *in, ptrdiff_t in_stride, void *out, ptrdiff_t out_stride,
                            int row_values, int height, long fixed_level, const long long *found_level,
                            unsigned maxval, int invert)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= row_values) return;
    long level = found_level ? static_cast<long>(*found_level) : fixed_level;
    for (int y = blockIdx.y; y < height; y += gridDim.y) {
        T *dst = reinterpret_cast<T *>(static_cast<char *>(out) + static_cast<ptrdiff_t>(y) * out_stride);
        dst[i] = static_cast<T>(threshold_pixel(row_at<T>(in, in_stride, y)[i], level, maxval, invert));
    }
}

template <typename T>
cudaError_t launch(const threshold_state *s, const ip_image *in, ip_image *out, void *scratch, cudaStream_t stream)
{
    int row_values = in->shape.width * in->shape.channels;
    int height = in->shape.height;
    dim3 grid((row_values + kThreads - 1) / kThreads, height < (int)kMaxRowBlocks ? height : kMaxRowBlocks);
    long long *found = nullptr;
    if (s->otsu) {
        int bins = threshold_bins(in->shape.dtype);
        auto *hist = static_cast<unsigned long long *>(scratch);
        found = reinterpret_cast<long long *>(hist + bins);
        cudaError_t rc = cudaMemsetAsync(hist, 0, threshold_hist_bytes(in->shape.dtype), stream);
        if (rc != cudaSuccess) return rc;
        count_values<T><<<grid, kThreads, 0, stream>>>(in->data, in->stride, row_values, height, hist);
        pick_level<<<1, 1, 0, stream>>>(hist, bins, (unsigned long long)row_values * (unsigned long long)height, found);
    }
    apply_level<T><<<grid, kThreads, 0, stream>>>(in->data, in->stride, out->data, out->stride, row_values, height,
                                                  s->level, found, sizeof(T) == 1 ? 255u : 65535u, s->invert);
    return cudaGetLastError();
}

}  // namespace

extern "C" int threshold_run_cuda(const threshold_state *s, const ip_image *in, ip_image *out, void *scratch,
                                  void *stream, char *err, size_t errlen)
{
    auto cuda_stream = static_cast<cudaStream_t>(stream);
    cudaError_t rc = in->shape.dtype == IP_U8 ? launch<uint8_t>(s, in, out, scratch, cuda_stream)
                                              : launch<uint16_t>(s, in, out, scratch, cuda_stream);
    if (rc == cudaSuccess) return IP_OK;
    snprintf(err, errlen, "CUDA: %s", cudaGetErrorString(rc));
    return IP_ECUDA;
}
