/* Hooks for bench/ and tests/, not for plugins or applications: calls that force one GPU
 * implementation of a kernel of ipk.h, or one of its instantiations, so that a run times or
 * checks it beside what the plain call (ipk.h) takes. Every forced path gives the plain call's
 * bytes, or IPK_EINVAL where it does not apply. */
#ifndef IPK_BENCH_H
#define IPK_BENCH_H

#include "ipk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which GPU implementation a call takes. AUTO is what the plain calls do. TILE forces the
 * kernels that served a case before the vec kernels (convolve and mean: the register-blocked
 * fast path, running sums and shared-memory tiles; median: packed rank rows, Huang by
 * load-add-store, u16 radix selection). NET is median's issue-14 kernels (convolve and mean
 * refuse it). VEC forces the vec kernels:
 * - convolve: 1-channel u8 in; the 16-bit-lane kernel (kernels/gpu/convolve_vec_block.cuh: 16
 *   columns x 1 to 6 rows a thread, every input row loaded before any arithmetic) for 3x3 and 5x5
 *   integer weights whose sums the lanes hold (sum |w| * 255 <= 65535), u8 out; the float kernel
 *   (convolve_vecf_block.cuh: 8 columns x 6 or 8 rows a thread, bit-identical to the CPU) for 3x3
 *   float weights (not all whole numbers), u8 or f32 out; the separable kernel
 *   (convolve_vecsep_block.cuh: 8 columns x 2 to 8 rows a thread, row pass in 16-bit lanes, column
 *   pass in 32 bits) for separable integer 3x3, 5x5 and 7x7 with factors of one sign each whose row
 *   sums fit 16 bits, u8 or f32 out; every border. Plain calls take them where CONV_VEC_AUTO,
 *   CONV_VECF_AUTO, CONV_VECSEP_AUTO (convolve.cu) and CONV_VEC5_AUTO (convolve_vec.h) say.
 * - mean: 1-channel u8; radius 1 or 2 by the 16-bit-lane kernel, every border; radius 3 to 31
 *   (not shrink, 16-byte rows, width at least 272, or 288 past radius 15) by the band kernel
 *   (mean_band.cuh: each thread walks a band of rows down 32 columns with their vertical sums in
 *   registers; the tile kernels make the columns near the sides). Plain calls take them where
 *   MEAN_VEC_AUTO, MEAN_VEC5_AUTO and MEAN_BAND_AUTO (mean.cu) say.
 * - median: the vec median (median_vec_block.cuh: 16 columns x 4 rows a thread, sorted columns in
 *   16-bit lanes) for 1-channel u8, radius 1, not shrink (IPK_ERANGE past 1,048,560 rows, the
 *   grid's limit); plain calls take it where MEDIAN_VEC_AUTO (median.cu) says, and the packed
 *   kernel past that height.
 * The values 1 and 4 named the strip and register kernels, deleted as slower than the tiles on
 * the H100 (bench/RESULTS.md keeps their numbers); they, and others, give IPK_EINVAL. */
typedef enum {
    IPK_GPU_AUTO = 0,
    IPK_GPU_TILE = 2,
    IPK_GPU_NET = 3,
    IPK_GPU_VEC = 5
} ipk_gpu_path;

int ipk_convolve_gpu_path(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p,
                          void *scratch, size_t scratch_bytes, void *stream, ipk_gpu_path path);
/* The convolve vec path with another number of rows a thread (shapes 1 to 6), the certified tile
 * kernel (shape 7) or the tensor-core kernel with its other limb count (shape 8); see
 * convolve.cu. */
int ipk_convolve_gpu_vec_shape(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p, void *stream,
                               int shape);

int ipk_mean_gpu_path(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                      void *scratch, size_t scratch_bytes, void *stream, ipk_gpu_path path);
/* The band mean kernel (what VEC takes at radius 3 to 31) with bands of at least 0 (as short as
 * fill the device's resident blocks), 64 or 128 rows for variant 0, 1 or 2; others, and images
 * the kernel does not take, give IPK_EINVAL. */
int ipk_mean_gpu_band(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, void *stream,
                      int variant);

/* median: AUTO is VEC for 1-channel u8 3x3 (not shrink) and NET for the rest (but for other 8-bit
 * 3x3, where TILE measured faster; 1-channel u8 5x5 and 7x7 run NET's 8x2 shuffle tiles), the
 * issue-14 kernels (u8 and u16, 1 channel, radius 1-3, not shrink: separable networks shared by
 * neighbouring outputs; other u8: Huang histograms updated by shared-memory atomics); TILE the
 * kernels before them. Other u16 and all f32 take the radix selection on every path. */
int ipk_median_gpu_path(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                        void *scratch, size_t scratch_bytes, void *stream, ipk_gpu_path path);
/* The vec median (what IPK_GPU_VEC runs for median) in another of its instantiations: `rows`
 * output rows a thread, `blocks_per_sm` resident blocks asked of ptxas, output rows `paired`
 * (sorting their two common rows once) or not. Taken: (2, 8, 0), which IPK_GPU_VEC runs,
 * (2, 10, 0), (4, 7, 0), (6, 6, 0) and (2, 6, 1); IPK_EINVAL for others and for what IPK_GPU_VEC
 * refuses. */
int ipk_median_gpu_vec_variant(const ipk_img *src, const ipk_img *dst, ipk_border border, int rows,
                               int blocks_per_sm, int paired, void *stream);

#ifdef __cplusplus
}
#endif
#endif
