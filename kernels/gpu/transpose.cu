/* Transpose on the GPU through shared-memory tiles.
 * 8-bit one-channel images with 4-byte aligned rows: 64x64-byte tiles, each thread loads a
 * 4x4 byte block as four words, transposes it in registers and stores words, so every global
 * access is a word. Everything else: 32x32 tiles of whole pixels (+1 column against bank
 * conflicts), the pixel moved as one aligned value when the rows allow, else as bytes. */
#include "gpu_common.cuh"

#define TILE 32
#define TILE_ROWS 8
#define BTILE 64

template <int N> struct __align__(1) pix_bytes { unsigned char b[N]; };

template <typename P>
__global__ void transpose_tiles(const char *src, ptrdiff_t ss, char *dst, ptrdiff_t ds, int width, int height)
{
    __shared__ P tile[TILE][TILE + 1];
    const int bx = blockIdx.x * TILE, by = blockIdx.y * TILE;
    #pragma unroll
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int x = bx + threadIdx.x, y = by + threadIdx.y + j;
        if (x < width && y < height) tile[threadIdx.y + j][threadIdx.x] = ((const P *)(src + (ptrdiff_t)y * ss))[x];
    }
    __syncthreads();
    #pragma unroll
    for (int j = 0; j < TILE; j += TILE_ROWS) {
        int ox = by + threadIdx.x, oy = bx + threadIdx.y + j;   /* dst is height wide, width tall */
        if (ox < height && oy < width) ((P *)(dst + (ptrdiff_t)oy * ds))[ox] = tile[threadIdx.x][threadIdx.y + j];
    }
}

/* Rows r0..r3 of a 4x4 byte block (byte k of word = column k) -> its columns as words. */
__device__ __forceinline__ void transpose4x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3)
{
    uint32_t t0 = __byte_perm(r0, r1, 0x5140), t1 = __byte_perm(r2, r3, 0x5140);  /* a0 b0 a1 b1 */
    uint32_t t2 = __byte_perm(r0, r1, 0x7362), t3 = __byte_perm(r2, r3, 0x7362);  /* a2 b2 a3 b3 */
    r0 = __byte_perm(t0, t1, 0x5410);
    r1 = __byte_perm(t0, t1, 0x7632);
    r2 = __byte_perm(t2, t3, 0x5410);
    r3 = __byte_perm(t2, t3, 0x7632);
}

__device__ __forceinline__ uint32_t load_word_or_bytes(const uint8_t *row, int x, int width, bool full)
{
    if (full) return *(const uint32_t *)(row + x);
    uint32_t w = 0;
    for (int k = 0; k < 4; k++)
        if (x + k < width) w |= (uint32_t)row[x + k] << (8 * k);
    return w;
}

__device__ __forceinline__ void store_word_or_bytes(uint8_t *row, int x, int width, uint32_t w, bool full)
{
    if (full) {
        *(uint32_t *)(row + x) = w;
        return;
    }
    for (int k = 0; k < 4; k++)
        if (x + k < width) row[x + k] = (uint8_t)(w >> (8 * k));
}

/* Block 16x16 threads, one 64x64 tile; thread (tx, ty) owns the 4x4 block at column 4tx,
 * row 4ty. Shared words: tile_t[output row][output word], 17 words a row. */
__global__ void transpose_u8_words(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width,
                                   int height)
{
    __shared__ uint32_t tile_t[BTILE][BTILE / 4 + 1];
    const int bx = blockIdx.x * BTILE, by = blockIdx.y * BTILE;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const bool full_in = bx + BTILE <= width && by + BTILE <= height;
    uint32_t r[4];
    #pragma unroll
    for (int k = 0; k < 4; k++) {
        int y = by + 4 * ty + k;
        r[k] = y < height ? load_word_or_bytes(src + (ptrdiff_t)y * ss, bx + 4 * tx, width, full_in) : 0u;
    }
    transpose4x4(r[0], r[1], r[2], r[3]);
    #pragma unroll
    for (int k = 0; k < 4; k++) tile_t[4 * tx + k][ty] = r[k];
    __syncthreads();
    const int t = ty * 16 + tx;
    const int word = t % 16;
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        int orow = t / 16 + 16 * i;          /* output row within the tile = input column */
        int oy = bx + orow, ox = by + 4 * word;
        if (oy < width && ox < height)
            store_word_or_bytes(dst + (ptrdiff_t)oy * ds, ox, height, tile_t[orow][word], full_in);
    }
}

template <typename P>
static void launch_tiles(const ipk_img *src, const ipk_img *dst, cudaStream_t s)
{
    dim3 block(TILE, TILE_ROWS), grid(ipk_div_up(src->width, TILE), ipk_div_up(src->height, TILE));
    transpose_tiles<P><<<grid, block, 0, s>>>((const char *)src->data, src->stride, (char *)dst->data, dst->stride,
                                              src->width, src->height);
}

/* The pixel type: an aligned word when every row start allows it, else bytes. */
template <typename Aligned, int N>
static void launch_sized(const ipk_img *src, const ipk_img *dst, cudaStream_t s)
{
    if (ipk_aligned(src->data, src->stride, alignof(Aligned)) && ipk_aligned(dst->data, dst->stride, alignof(Aligned)))
        launch_tiles<Aligned>(src, dst, s);
    else
        launch_tiles<pix_bytes<N>>(src, dst, s);
}

struct u16x3 { uint16_t v[3]; };
struct u32x3 { uint32_t v[3]; };

static int launch_by_pixel_size(const ipk_img *src, const ipk_img *dst, int px, cudaStream_t s)
{
    switch (px) {
    case 1: launch_tiles<uint8_t>(src, dst, s); break;
    case 2: launch_sized<uint16_t, 2>(src, dst, s); break;
    case 3: launch_tiles<pix_bytes<3>>(src, dst, s); break;
    case 4: launch_sized<uint32_t, 4>(src, dst, s); break;
    case 6: launch_sized<u16x3, 6>(src, dst, s); break;
    case 8: launch_sized<uint2, 8>(src, dst, s); break;
    case 12: launch_sized<u32x3, 12>(src, dst, s); break;
    case 16: launch_sized<uint4, 16>(src, dst, s); break;
    default: return IPK_EINVAL;
    }
    return ipk_launch_status();
}

extern "C" int ipk_transpose_gpu(const ipk_img *src, const ipk_img *dst, void *stream)
{
    if (!ipk_img_ok(src) || !ipk_img_ok(dst) || src->width != dst->height || src->height != dst->width ||
        src->channels != dst->channels || src->dtype != dst->dtype)
        return IPK_EINVAL;
    if (ipk_img_empty(src)) return IPK_OK;
    if (ipk_div_up(src->height, TILE) > IPK_MAX_GRID_Y) return IPK_ERANGE;
    cudaStream_t s = (cudaStream_t)stream;
    const int px = src->channels * ipk_dtype_size(src->dtype);
    if (px == 1 && ipk_aligned(src->data, src->stride, 4) && ipk_aligned(dst->data, dst->stride, 4)) {
        dim3 block(16, 16), grid(ipk_div_up(src->width, BTILE), ipk_div_up(src->height, BTILE));
        transpose_u8_words<<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride, (uint8_t *)dst->data,
                                                  dst->stride, src->width, src->height);
        return ipk_launch_status();
    }
    return launch_by_pixel_size(src, dst, px, s);
}
