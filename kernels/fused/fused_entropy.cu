/* Run-time fusion (core/src/exec/fuse_plan.c): the entropy map's fast path whose tile load applies a
 * chain of point stages to the original pixels, so that e.g. grayscale -> entropy reads the RGB
 * image once and never writes the gray one. The core puts before this file ip_chain() with IP_T
 * (unsigned char), IP_IN_CH, IP_OUT_CH == 1, and the entropy's parameters: IP_ENT_RADIUS (1..3),
 * IP_ENT_LEVELS (>= 256, so no u8 value is out of range), IP_ENT_BINS (<= 16), IP_ENT_F32 (1: f32
 * output, 0: u8), IP_ENT_OUT_SCALE and the tables ip_ent_t_n and ip_ent_inv_n, written from
 * kernels/common/entropy_tables.h as the unfused kernel uploads them. The strip is computed by
 * entropy_fast.cuh, the code kernels/gpu/entropy.cu runs, so the result is the unfused one's bit
 * for bit. Compiled by NVRTC. */
#include "entropy_fast.cuh"
#include "fused_pixels.cuh"

/* Tile row ty holds source row ybase + ty, columns bx0 - ENTF_PAD .. bx0 + ENTF_BW + ENTF_PAD - 1,
 * as the chain's bin codes; ip_chain runs once per loaded pixel. */
__device__ void ipf_ent_load_tile(const ent_args &a, const unsigned char *lut, unsigned char *tile, int bx0,
                                  int ybase, int rows)
{
    const int chunks = ENTF_ROW / 16;
    for (int i = threadIdx.x; i < rows * chunks; i += blockDim.x) {
        int ty = i / chunks, c = i % chunks, y = ybase + ty, gx = bx0 - ENTF_PAD + 16 * c;
        unsigned char code[16];
        const char *row = a.src + (long long)y * a.src_stride;
        bool row_in = y >= 0 && y < a.height;
        if (row_in && gx >= 0 && gx + 16 <= a.width && ((size_t)(row + (size_t)gx * IP_IN_CH) & 15) == 0) {
            unsigned v[16];
            ipf_chain16(row, gx, v);
#pragma unroll
            for (int j = 0; j < 16; j++) code[j] = lut[v[j]];
        } else {
#pragma unroll
            for (int j = 0; j < 16; j++) {
                int x = gx + j;
                code[j] = (unsigned char)ENTF_EMPTY;
                if (row_in && x >= 0 && x < a.width) {
                    IP_T out[IP_OUT_CH];
                    ipf_chain_at(row, x, out);
                    code[j] = lut[out[0]];
                }
            }
        }
        entf_put_codes(tile, ty, c, code);
    }
}

extern "C" __global__ void __launch_bounds__(ENTF_THREADS) ip_fused_entropy(const char *src, long long ss, char *dst,
                                                                            long long ds, int width, int height)
{
    __shared__ __align__(16) unsigned char tile[(ENTF_STRIP + 2 * ENTF_MAXR) * ENTF_ROW];
    __shared__ entf_tables tables;
    ent_args a;
    a.src = src;
    a.dst = dst;
    a.src_stride = ss;
    a.dst_stride = ds;
    a.width = width;
    a.height = height;
    a.radius = IP_ENT_RADIUS;
    a.levels = IP_ENT_LEVELS;
    a.bins = IP_ENT_BINS;
    a.strip = ENTF_STRIP;
    a.dst_u8 = !IP_ENT_F32;
    a.out_scale = IP_ENT_OUT_SCALE;
    a.flag = 0;
    a.t_n = ip_ent_t_n;
    a.inv_n = ip_ent_inv_n;
    a.hist = 0;
    a.workers = 0;
    const int bx0 = blockIdx.x * ENTF_BW, y0 = blockIdx.y * ENTF_STRIP;
    const int y1 = min(y0 + ENTF_STRIP, height), trows = y1 - y0 + 2 * IP_ENT_RADIUS;
    entf_fill_tables(a, IP_ENT_RADIUS, true, &tables);
    __syncthreads();
    ipf_ent_load_tile(a, tables.lut, tile, bx0, y0 - IP_ENT_RADIUS, trows);
    __syncthreads();
    entf_walk_tile<IP_ENT_RADIUS, IP_ENT_F32 != 0>(a, tile, &tables, bx0, y0, trows);
}
