/* What of a TIFF's output the card compresses (tiff_gpu.h): which outputs, with which of nvCOMP's
 * algorithms, in which strips, and what share of them beside the cores. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <unistd.h>
#include "base/image.h"
#include "io/tiff_gpu.h"

/* nvCOMP's algorithm 4 (every level's) on a whole H100 or H200 given many chunks, in MB/s
 * (bench/RESULTS.md: two streams of 32 MiB batches, 380 MB/s together). */
#define CARD_MB_S 350.0
/* A 64 KiB chunk's own time on the card: where the cores finish sooner, the card cannot help. */
#define CARD_LATENCY_MS 150.0

/* libdeflate on one core, MB/s of predicted photograph rows in 64 KiB strips, level by level:
 * the developer machine's ratios between levels (bench/RESULTS.md), scaled to the 24 MB/s a
 * folder worker's level 6 took on the H200 machine, writing included. */
static const double core_mb_s_for_level[10] = { 24, 97, 65, 58, 53, 36, 24, 12, 4, 2.5 };

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

uint32_t tiff_gpu_rows_per_strip(const ip_shape *shape)
{
    long kb = io_gpu_env_long("IMGPIPE_TIFF_GPU_STRIP_KB", TIFF_GPU_STRIP_KB, 1, 65536);
    size_t row = img_row_bytes(shape);
    uint64_t rows = row ? ((uint64_t)kb << 10) / row : 1;
    if (rows < 1) rows = 1;
    return rows > (uint64_t)shape->height ? (uint32_t)shape->height : (uint32_t)rows;
}

static double env_share(void)
{
    const char *v = getenv("IMGPIPE_TIFF_GPU_SHARE");
    if (!v || !*v) return -1;
    double pct = strtod(v, NULL);
    return pct < 0 ? 0 : pct > 100 ? 1 : pct / 100;
}

double tiff_gpu_card_share(const ip_shape *shape, const io_options *opt, int forced, int cards)
{
    if (!tiff_gpu_encodable(shape, opt)) return 0;
    if (forced) return 1;
    if (opt->tiff_compression != IO_TIFF_DEFLATE) return 0;
    int level = opt->tiff_level >= 1 && opt->tiff_level <= 9 ? opt->tiff_level : 6;
    double core = core_mb_s_for_level[level];
    double mb = (double)img_row_bytes(shape) * (double)shape->height / 1e6;
    if (mb / (core * io_thread_count(opt)) * 1000 < CARD_LATENCY_MS) return 0;
    double override = env_share();
    if (override >= 0) return override;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    double cores = (double)(online > 0 ? online : 1) / (cards > 0 ? cards : 1);
    return CARD_MB_S / (CARD_MB_S + cores * core);
}
