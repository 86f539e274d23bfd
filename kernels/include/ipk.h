/* imgpipe kernels: pure compute over strided arrays, no knowledge of plugins or files.
 * CPU functions use OpenMP with `threads` threads (0 = OpenMP's default).
 * GPU functions take device pointers and a cudaStream_t passed as void *; they only
 * enqueue work on that stream and never synchronise the device. This is what plugins call;
 * the hooks that force one GPU implementation, for bench/ and tests/, are in ipk_bench.h. */
#ifndef IPK_H
#define IPK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { IPK_OK = 0, IPK_EINVAL = 1, IPK_ENOMEM = 2, IPK_ERANGE = 3, IPK_ECUDA = 6 } ipk_status;
typedef enum { IPK_U8 = 1, IPK_U16 = 2, IPK_F32 = 3 } ipk_dtype;   /* same values as ip_dtype */
typedef enum { IPK_REPLICATE = 0, IPK_REFLECT101 = 1, IPK_ZERO = 2, IPK_SHRINK = 3 } ipk_border;

/* An interleaved image: `channels` values per pixel, rows `stride` bytes apart. */
typedef struct {
    void *data;
    ptrdiff_t stride;
    int width, height, channels;
    ipk_dtype dtype;
} ipk_img;

/* grayscale: 3 or 4 channels (alpha ignored) -> 1 channel of the same dtype.
 * Integer: (R*w0 + G*w1 + B*w2 + 16384) >> 15 with w0+w1+w2 = 32768 (bt601: 9798, 19235, 3735).
 * Float: R*w0/32768 + G*w1/32768 + B*w2/32768. */
int ipk_grayscale_cpu(const ipk_img *src, const ipk_img *dst, const int32_t weights_q15[3], int threads);
int ipk_grayscale_gpu(const ipk_img *src, const ipk_img *dst, const int32_t weights_q15[3], void *stream);

/* transpose: dst(x, y) = src(y, x); dst is height x width, same dtype and channels. */
int ipk_transpose_cpu(const ipk_img *src, const ipk_img *dst, int threads);
int ipk_transpose_gpu(const ipk_img *src, const ipk_img *dst, void *stream);

/* median of the (2r+1)^2 window, each channel on its own; IPK_SHRINK takes the lower
 * median of the in-image values (the (n-1)/2-th smallest). */
int ipk_median_cpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, int threads);
int ipk_median_gpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                   void *scratch, size_t scratch_bytes, void *stream);
size_t ipk_median_gpu_scratch(int width, int height, int channels, ipk_dtype dtype, int radius);

/* mean: box average of the (2r+1)^2 window; integers rounded half up, i.e.
 * floor((sum + n/2) / n); IPK_SHRINK divides by the count of in-image pixels. */
int ipk_mean_cpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, int threads);
int ipk_mean_gpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                 void *scratch, size_t scratch_bytes, void *stream);
size_t ipk_mean_gpu_scratch(int width, int height, int channels, ipk_dtype dtype, int radius);

/* convolve: correlation as OpenCV filter2D with an odd kw x kh kernel (row-major, anchor at
 * the centre), result = sum / divisor + offset; integer dst rounded to nearest and
 * saturated, float dst (IPK_F32) kept as is. dst may be the src dtype or IPK_F32.
 * IPK_SHRINK: out-of-image pixels contribute nothing and the divisor is unchanged (as IPK_ZERO).
 * The exact arithmetic, which the CPU and GPU share bit for bit, is described at the top of
 * kernels/cpu/convolve.c. */
typedef struct {
    const double *weights;
    int kw, kh;
    double divisor;
    double offset;
    ipk_border border;
} ipk_conv_params;
int ipk_convolve_cpu(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, int threads);
int ipk_convolve_gpu(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p,
                     void *scratch, size_t scratch_bytes, void *stream);
size_t ipk_convolve_gpu_scratch(int width, int height, int channels, ipk_dtype dtype, int kw, int kh);

/* entropy: src 1-channel U8 or U16; window (2r+1)^2 cut at the image border;
 * bin = value * bins / levels; H = log n - (1/n) sum n_i log n_i in the given base
 * (log_base_e = 1 for natural log, else 1/ln(base)). dst F32, or U8 scaled so that
 * log(min(bins, (2r+1)^2)) maps to 255 (rounded). A value >= levels gives IPK_ERANGE and
 * stores it in *bad_value. */
typedef struct {
    int radius, levels, bins;
    double log_scale;   /* multiply natural-log entropy by this: 1, 1/ln 2, 1/ln 10 */
} ipk_entropy_params;
int ipk_entropy_cpu(const ipk_img *src, const ipk_img *dst, const ipk_entropy_params *p,
                    int threads, int64_t *bad_value);
int ipk_entropy_gpu(const ipk_img *src, const ipk_img *dst, const ipk_entropy_params *p,
                    void *scratch, size_t scratch_bytes, void *stream);
size_t ipk_entropy_gpu_scratch(int width, int height, const ipk_entropy_params *p);

/* histogram: counts[c * bins + b] for every channel c. U8: b = v * bins / 256;
 * U16: b = v * bins / 65536; F32: b = floor(v * bins) for v in [0, 1], clamped. */
int ipk_histogram_cpu(const ipk_img *src, int bins, uint64_t *counts, int threads);
/* counts_dev: device array of channels*bins uint32 (zeroed by the call). */
int ipk_histogram_gpu(const ipk_img *src, int bins, uint32_t *counts_dev, void *stream);

#ifdef __cplusplus
}
#endif
#endif
