/* What of a TIFF's output the card compresses (tiff_gpu.h): which outputs, with which of nvCOMP's
 * algorithms, in which strips, and what share of them beside the cores. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <unistd.h>
#include "base/image.h"
#include "io/tiff_gpu.h"
#include "io/io_tiff_strip_cpu.h"

/* nvCOMP's algorithm 4 (every level's) on a whole H200 given many 16 KiB pieces, in MB/s: a
 * 16-worker folder of 12-MP gray images written by the card alone ran 38.9 images/s. */
#define CARD_MB_S 470.0
/* Under load a worker's share on the card came back in about 250 ms (a 16-worker folder at level 6):
 * where its cores would finish the image sooner, the share does not pay (at level 1, 12.6 MB on
 * one core: 62 and 56 images/s with a share, 83 without). */
#define CARD_LATENCY_MS 250.0

/* libdeflate on one core, MB/s of predicted photograph rows, level by level: the developer
 * machine's ratios between levels, scaled to the 18 MB/s that balances the card's share best in a
 * 16-worker folder on the H200 machine (shares of 0.60-0.65 ran fastest at level 6), where the
 * cores also read the files, parse them and write; 4's measured the same way (the cores at 4 beside
 * the card: shares of 0.36, 0.42 and 0.48 ran 53.6-54.7, 54.4-54.5 and 54.8-55.7 images/s). */
static const double core_mb_s_for_level[10] = { 18, 73, 49, 43, 32, 27, 18, 9, 3, 1.9 };

#ifdef IMGPIPE_HAVE_CUDA
/* nvCOMP's deflate algorithm for each --tiff-level, by measured size (bench/tiff-folder.sh on the
 * H100, 2026-11-27: 12-MP photographs, 256 KiB strips with the predictor): algorithm 4 makes files
 * 7% smaller than libtiff's level 6 and 18% smaller than its level 1, algorithm 2 6% larger than
 * level 1, so every level takes 4; 0 (entropy coding only) is never chosen. Retune here. */
static const int deflate_algorithm_for_level[10] = { 0, 4, 4, 4, 4, 4, 4, 4, 4, 4 };

int tiff_gpu_deflate_algorithm(int level)
{
    return deflate_algorithm_for_level[level >= 1 && level <= 9 ? level : 6];
}

int tiff_gpu_encodable(const ip_shape *s, const io_options *opt)
{
    int codec_ok = opt->tiff_compression == IO_TIFF_DEFLATE || opt->tiff_compression == IO_TIFF_ZSTD;
    return codec_ok && (s->dtype == IP_U8 || s->dtype == IP_U16) && s->channels >= 1 && s->channels <= 4 &&
           s->width > 0 && s->height > 0;
}

#else

int tiff_gpu_encodable(const ip_shape *shape, const io_options *opt)
{
    (void)shape, (void)opt;
    return 0;
}
#endif

static double megabytes(const ip_shape *shape)
{
    return (double)img_row_bytes(shape) * (double)shape->height / 1e6;
}

static double core_mb_s(int level)
{
    return core_mb_s_for_level[level >= 1 && level <= 9 ? level : 6];
}

double tiff_gpu_core_deflate_ms(const ip_shape *shape, int level)
{
    return megabytes(shape) / core_mb_s(level) * 1e3;
}

double tiff_gpu_card_deflate_ms(const ip_shape *shape)
{
    return megabytes(shape) / CARD_MB_S * 1e3;
}

size_t tiff_gpu_chunk_bytes(void)
{
    return (size_t)io_gpu_env_long("IMGPIPE_TIFF_GPU_CHUNK_KB", TIFF_GPU_CHUNK_KB, 1, 65536) << 10;
}

uint32_t tiff_gpu_pieces(size_t len, size_t max_piece, size_t *each)
{
    size_t n = (len + max_piece - 1) / max_piece;
    *each = n > 0 ? (len + n - 1) / n : 0;
    return (uint32_t)n;
}

size_t tiff_gpu_piece_bytes(nvcomp_codec codec, size_t strip_bytes)
{
    return codec == NVCOMP_DEFLATE && tiff_gpu_chunk_bytes() < strip_bytes ? tiff_gpu_chunk_bytes() : strip_bytes;
}

uint32_t tiff_gpu_strip_chunks(const unsigned char *src, size_t len, size_t max_piece, unsigned char *slots,
                               size_t slot, uint32_t first, nvcomp_chunk *chunks)
{
    size_t each = 0;
    uint32_t n = tiff_gpu_pieces(len, max_piece, &each);
    for (uint32_t k = 0; k < n; k++) {
        size_t at = (size_t)k * each, p = (size_t)first + k;
        chunks[p] = (nvcomp_chunk){ .src = src + at,
                                    .src_bytes = len - at < each ? len - at : each,
                                    .dst = slots + p * slot + NVCOMP_CHUNK_ALIGN,
                                    .dst_capacity = slot - 2 * NVCOMP_CHUNK_ALIGN };
    }
    return n;
}

static double env_share(void)
{
    const char *v = getenv("IMGPIPE_TIFF_GPU_SHARE");
    if (!v || !*v) return -1;
    double pct = strtod(v, NULL);
    return pct < 0 ? 0 : pct > 100 ? 1 : pct / 100;
}

int tiff_gpu_cores_level(const io_gpu_codecs *c, int zlib_level)
{
    if (c) return c->tiff_fast ? tiff_fast_check_level(c->tiff_fast, zlib_level) : tiff_libdeflate_level(zlib_level);
    return tiff_fast_wanted() ? tiff_libdeflate_level_beside_card_image(zlib_level) : tiff_libdeflate_level(zlib_level);
}

double tiff_gpu_card_share(const ip_shape *shape, const io_options *opt, int forced, int cards, int cores_level)
{
    if (!tiff_gpu_encodable(shape, opt)) return 0;
    if (forced) return 1;
    if (opt->tiff_compression != IO_TIFF_DEFLATE) return 0;
    double override = env_share();
    if (override >= 0) return override;
    if (tiff_gpu_core_deflate_ms(shape, opt->tiff_level) / io_thread_count(opt) < CARD_LATENCY_MS) return 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    double cores = (double)(online > 0 ? online : 1) / (cards > 0 ? cards : 1);
    return CARD_MB_S / (CARD_MB_S + cores * core_mb_s(cores_level > 0 ? cores_level : opt->tiff_level));
}
