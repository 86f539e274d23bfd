/* imgpipe kernels: pure compute over strided arrays, no knowledge of plugins or files.
 * CPU functions use OpenMP with `threads` threads (0 = OpenMP's default).
 * GPU functions take device pointers and a cudaStream_t passed as void *; they only
 * enqueue work on that stream and never synchronise the device. */
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

/* Benchmarks and tests: which GPU implementation a call takes. AUTO is what the plain calls do:
 * the register kernels where they apply and their switches let them (CONV_REG_AUTO_MAX_K in
 * convolve.cu, MEAN_REG_AUTO_MAX_RADIUS and MEAN_RM_AUTO in mean.cu: all off, as the register
 * kernels measured slower than the tiles on the H100), else the tile kernels
 * (the strip kernel measured slower on the H100, bench/RESULTS.md). STRIP forces the exact
 * 16-bit-lane strip kernel (1-channel u8 in and out; convolve: integer k x k weights, k = 3 or
 * 5, or 7 when separable with non-negative factors, whose sums fit the lanes; mean: radius 1 to
 * 3, not shrink). REG forces the register kernels (1-channel u8 in; convolve: k x k, k = 3, 5
 * or 7, u8 or f32 out, float weights or integer ones with sum|w| * 255 < 2^24; mean: radius 1
 * to 3 not shrink, and radius 4 to 15 on every border by running sums). Both return IPK_EINVAL
 * where they do not apply. TILE forces the kernels that served these cases before them. NET is
 * median's issue-14 kernels (convolve and mean refuse it; median refuses STRIP and REG).
 * VEC forces the vec kernel (kernels/gpu/vec_block.cuh: 16 columns x 1 to 6 rows a thread,
 * every input row loaded before any arithmetic, exact 16-bit lanes): 1-channel u8 in and out, mean
 * radius 1 or 2 and convolve 3x3 or 5x5 integer weights whose sums the lanes hold (sum |w| * 255
 * <= 65535, the STRIP planner's rule), every border; plain calls take it where MEAN_VEC_AUTO
 * (mean.cu) and CONV_VEC_AUTO (convolve.cu) say for radius 1 (on), MEAN_VEC5_AUTO (mean.cu) and
 * CONV_VEC5_AUTO (conv_vec.h) for radius 2 (on). Results are the same
 * on every path.
 * VEC also takes convolve 3x3 with float weights (not all whole numbers: the CPU's float path) on
 * 1-channel u8 input, u8 or f32 output, every border (kernels/gpu/vecf_block.cuh: 8 columns x 6 or
 * 8 rows a thread, bit-identical to the CPU); plain calls take it only where CONV_VECF_AUTO
 * (convolve.cu) says (on). The same for float 5x5 and 7x7 (kernels/gpu/vecfr_block.cuh: 4 columns
 * x 8 to 16 rows a thread); plain calls take it only where CONV_VECFR_AUTO (convolve.cu) says (off).
 * VEC also takes the separable integer convolves of radius 1 to 3 (3x3, 5x5, 7x7; the 7x7 binomial)
 * that the 16-bit vec kernel does not, on 1-channel u8 input, u8 or f32 output, every border:
 * factors of one sign each whose row sums fit 16 bits (kernels/gpu/vecsep_block.cuh: 8 columns x 2
 * to 8 rows a thread, row pass in 16-bit lanes, column pass in 32 bits, the CPU's finish); plain
 * calls take it only where CONV_VECSEP_AUTO (convolve.cu) says (off).
 * VEC also takes mean of radius 3 to 31 on 1-channel u8 (not shrink, 16-byte rows, width at least
 * 272, or 288 past radius 15) by the band kernel (kernels/gpu/mean_band.cuh: each thread walks a
 * band of rows down 32 columns with their vertical sums in registers; the tile kernels make the
 * columns near the sides), which plain calls take where MEAN_BAND_AUTO (mean.cu) says. */
typedef enum {
    IPK_GPU_AUTO = 0,
    IPK_GPU_STRIP = 1,
    IPK_GPU_TILE = 2,
    IPK_GPU_NET = 3,
    IPK_GPU_REG = 4,
    IPK_GPU_VEC = 5
} ipk_gpu_path;
int ipk_convolve_gpu_path(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p,
                          void *scratch, size_t scratch_bytes, void *stream, ipk_gpu_path path);
/* Timing hook for bench_gpu, not for applications: the convolve vec path with another number of
 * rows a thread (shapes 1 to 6), or the certified tile kernel (shape 7; see convolve.cu), so that
 * one run times it beside the default. */
int ipk_convolve_gpu_vec_shape(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, void *stream,
                               int shape);
int ipk_mean_gpu_path(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                      void *scratch, size_t scratch_bytes, void *stream, ipk_gpu_path path);
/* bench_gpu only: the band mean kernel (what VEC takes at radius 3 to 31) with bands of at least
 * 0 (as short as fill the device's resident blocks), 64 or 128 rows for variant 0, 1 or 2; others,
 * and images the kernel does not take, give IPK_EINVAL. */
int ipk_mean_gpu_band(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, void *stream,
                      int variant);
/* median: AUTO is VEC for 1-channel u8 3x3 (not shrink) and NET for the rest (but for other 8-bit
 * 3x3, where TILE measured faster; 1-channel u8 5x5 and 7x7 run NET's 8x2 shuffle tiles), the issue-14 kernels (u8 and u16, 1 channel, radius 1-3, not shrink:
 * separable networks shared by neighbouring outputs; other u8: Huang histograms updated by
 * shared-memory atomics); TILE the kernels before them (u8: packed rank rows, Huang by
 * load-add-store; u16: radix selection). Other u16 and all f32 take the radix selection on
 * every path; STRIP and REG give IPK_EINVAL. VEC forces the vec median (kernels/gpu/
 * median_vec_block.cuh: 16 columns x 4 rows a thread, every input row loaded before any
 * arithmetic, sorted columns in 16-bit lanes): 1-channel u8, radius 1, not shrink (IPK_EINVAL
 * otherwise; IPK_ERANGE past 1,048,560 rows, the grid's limit); plain calls take it where
 * MEDIAN_VEC_AUTO (median.cu) says (on), and the packed kernel past that height. */
int ipk_median_gpu_path(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                        void *scratch, size_t scratch_bytes, void *stream, ipk_gpu_path path);
/* The vec median (what IPK_GPU_VEC runs for median) in another of its instantiations, for the
 * bench to compare: `rows` output rows a thread, `blocks_per_sm` resident blocks asked of ptxas,
 * output rows `paired` (sorting their two common rows once) or not. Taken: (2, 8, 0), which
 * IPK_GPU_VEC runs, (2, 10, 0), (4, 7, 0), (6, 6, 0) and (2, 6, 1); IPK_EINVAL for others and
 * for what IPK_GPU_VEC refuses. */
int ipk_median_gpu_vec_variant(const ipk_img *src, const ipk_img *dst, ipk_border border, int rows,
                               int blocks_per_sm, int paired, void *stream);

/* median, separable networks in one of their tile variants (for the bench and the tests, which
 * time and check them side by side; kernels/gpu/median_sep_var.cu): u8, 1 channel, radius 2 or
 * 3, every border but IPK_SHRINK; variant 0.. while ipk_median_gpu_sep_variant_name(radius,
 * variant) is not NULL. The same result as ipk_median_gpu; IPK_EINVAL for anything else. */
int ipk_median_gpu_sep_variant(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                               void *stream, int variant);
const char *ipk_median_gpu_sep_variant_name(int radius, int variant);

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
