/* Helpers shared by the CPU and GPU benchmarks: the test pattern, host images, medians. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include "ipk_bench.h"

/* Every kernel is a weak reference: its address is NULL while that kernel is not written yet,
 * and the bench reports "not built" rather than failing to link (CMake links the kernel
 * libraries whole, so a kernel that exists is always found). */
#pragma weak ipk_grayscale_cpu
#pragma weak ipk_grayscale_gpu
#pragma weak ipk_transpose_cpu
#pragma weak ipk_transpose_gpu
#pragma weak ipk_median_cpu
#pragma weak ipk_median_gpu
#pragma weak ipk_median_gpu_scratch
#pragma weak ipk_median_gpu_path
#pragma weak ipk_median_gpu_vec_variant
#pragma weak ipk_mean_cpu
#pragma weak ipk_mean_gpu
#pragma weak ipk_mean_gpu_scratch
#pragma weak ipk_mean_gpu_path
#pragma weak ipk_mean_gpu_band
#pragma weak ipk_convolve_cpu
#pragma weak ipk_convolve_gpu
#pragma weak ipk_convolve_gpu_scratch
#pragma weak ipk_convolve_gpu_path
#pragma weak ipk_convolve_gpu_vec_shape
#pragma weak ipk_entropy_cpu
#pragma weak ipk_entropy_gpu
#pragma weak ipk_entropy_gpu_scratch
#pragma weak ipk_histogram_cpu
#pragma weak ipk_histogram_gpu

/* The bench pattern at (x, y, channel): a diagonal saw-tooth gradient plus hashed noise
 * 0..63, never all zero. bench_cpu_opencv.py computes the same values with numpy. */
uint8_t bench_pattern(uint32_t x, uint32_t y, uint32_t c);

/* Host image of w x h x c bytes (U8), rows `pad` bytes longer than needed, filled with the
 * pattern shifted right by `shift` bits (shift 4 gives the 16 levels 0..15 for entropy),
 * starting at pattern coordinates (x0, y0). Returns 0, or -1 when the size overflows or
 * memory runs out. Free with bench_img_free. */
int bench_img_pattern(ipk_img *img, int w, int h, int c, int pad, int shift, int x0, int y0);
/* The same, zero-filled, of any dtype. */
int bench_img_zeros(ipk_img *img, int w, int h, int c, ipk_dtype t, int pad);
void bench_img_free(ipk_img *img);
/* Bytes per row of values and the whole buffer, or 0 on overflow. */
size_t bench_img_bytes(const ipk_img *img);

/* Median of v[0..n-1] (sorts v). */
double bench_median(double *v, int n);
/* Wall clock in milliseconds. */
double bench_now_ms(void);
#endif
