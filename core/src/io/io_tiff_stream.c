/* TIFF streamed: read a band of strips or a row of tiles at a time (blocks of a band decoded by
 * all threads, one libtiff handle each on the one descriptor), written a strip at a time
 * (compressed by all threads while the next rows arrive, written in order) with the whole-image
 * writer's layout and tags, so the file is the same bytes; beside a GPU's batch compressor the
 * strips go out as they are done, and the bytes depend on who took each. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_internal.h"
#include "io/io_limits.h"
#include "io/meta_tiff.h"
#include "io/io_stream_internal.h"
#include "io/io_tiff_handle.h"
#include "io/io_tiff_strip_cpu.h"
#include "base/image.h"
#include "base/mono_clock.h"
#include "io/task_pool.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rows handed out at a time: at most this much where blocks allow; fewer, larger bands cost less
 * in thread start-up and barriers per stage call. */
#define BAND_TARGET_BYTES ((uint64_t)16 << 20)

typedef struct {
    TIFF *tif;
    tiff_log log;
    tiff_fd_cursor cursor;
    unsigned char *scratch;   /* one tile */
} tiff_worker;

typedef struct {
    int threads;
    tiff_worker *workers;     /* workers[0] holds the handle that read the tags */
    task_pool *pool;          /* the threads decoding a band's blocks, workers[i] the ith's */
    pthread_mutex_t failed_mu;
    uint32_t width, height, bw, bh, across, blocks_down_per_band;
    int tiled;
    int zero_first;           /* the decoder may leave part of a block unwritten: zero it first */
    uint64_t block_row_bytes, block_bytes;
    size_t row_bytes;         /* a packed image row */
    ip_image band;
    uint32_t next_row;
    uint64_t failed_block;
    char failed_msg[256];
    io_options opt;           /* the caller's: fail_on, and where the warnings go */
    io_warnings seen;         /* libtiff's warnings since the last band, settled after it */
    const tiff_band_decoder *decoder;   /* set: each band goes to it first */
    void *decoder_state;
    unsigned char *raw;       /* a band's blocks as stored, for a decoder that places none */
    size_t raw_cap;
    tiff_band_block *blocks;  /* a band's, for the decoder */
    unsigned char **block_at; /* where the decoder placed them */
    int raw_failed;           /* a placed block read short (under failed_mu) */
    int *staged;              /* the groups' bands the decoder holds, group after group */
    uint32_t group, depth;    /* bands a group, groups at once (tiff_band_decode.h) */
    uint32_t *group_len;      /* bands in each group */
    uint32_t cur, cur_next;   /* the group being handed out, and its bands handed out */
    uint64_t fill_y;          /* the row the next group staged starts at */
    int filled;               /* every group staged once */
    tiff_band_decode_stat decoded;
} tiff_stream_reader;

static int unsupported(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "this TIFF is not streamed (%s)", what);
    return IP_EUNSUPPORTED;
}

/* Streamed: contiguous 8-, 16-bit or 32-bit float samples, 1 to 4 of them, gray or RGB, with
 * no conversion; everything else goes to the whole-image reader. */
static int check_streamable(TIFF *tif, ip_shape *shape, char *err, size_t errlen)
{
    uint32_t w = 0, h = 0;
    uint16_t spp = 1, bps = 1, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG, photometric = 0;
    uint16_t compression = COMPRESSION_NONE;
    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h) ||
        !TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric))
        return unsupported(err, errlen, "no size or photometric tag");
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    uint16_t extra_count = 0, *extra = NULL;
    TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &extra_count, &extra);
    if (extra_count && extra && extra[0] == EXTRASAMPLE_ASSOCALPHA)
        return unsupported(err, errlen, "associated alpha, divided out by the whole-image reader");
    if (w == 0 || h == 0 || w > INT32_MAX || h > INT32_MAX) return unsupported(err, errlen, "image size");
    if (spp < 1 || spp > 4 || planar != PLANARCONFIG_CONTIG) return unsupported(err, errlen, "sample layout");
    if (photometric != PHOTOMETRIC_MINISBLACK && !(photometric == PHOTOMETRIC_RGB && spp >= 3))
        return unsupported(err, errlen, "colour model");
    if (compression == COMPRESSION_JPEG || compression == COMPRESSION_OJPEG || !TIFFIsCODECConfigured(compression))
        return unsupported(err, errlen, "compression");
    int is_float = format == SAMPLEFORMAT_IEEEFP;
    if (!(is_float ? bps == 32 : (format == SAMPLEFORMAT_UINT || format == SAMPLEFORMAT_VOID) && (bps == 8 || bps == 16)))
        return unsupported(err, errlen, "sample type");
    *shape = (ip_shape){ (int32_t)w, (int32_t)h, spp, is_float ? IP_F32 : bps == 16 ? IP_U16 : IP_U8 };
    return IP_OK;
}

static int corrupt(char *err, size_t errlen, const tiff_log *log, const char *fallback)
{
    snprintf(err, errlen, "truncated or corrupt TIFF: %s", tiff_log_text(log, fallback));
    return IP_EFORMAT;
}

static int block_layout(tiff_stream_reader *r, TIFF *tif, tiff_log *log, uint64_t band_bytes, char *err, size_t errlen)
{
    uint16_t compression = COMPRESSION_NONE;
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    r->zero_first = tiff_decoder_may_leave_unwritten(compression);
    r->tiled = TIFFIsTiled(tif);
    if (r->tiled) {
        uint32_t tw = 0, th = 0;
        TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
        TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
        if (tw == 0 || th == 0 || tw > TILE_SIDE_MAX || th > TILE_SIDE_MAX) return corrupt(err, errlen, log, "bad tile size");
        r->bw = tw;
        r->bh = th;
        r->across = (uint32_t)(((uint64_t)r->width + tw - 1) / tw);
        r->block_row_bytes = TIFFTileRowSize64(tif);
        r->block_bytes = TIFFTileSize64(tif);
        uint64_t down = ((uint64_t)r->height + th - 1) / th;
        if ((uint64_t)TIFFNumberOfTiles(tif) < down * r->across) return corrupt(err, errlen, log, "fewer tiles than the image needs");
        if (r->block_row_bytes < (uint64_t)tw * (r->row_bytes / r->width) || r->block_bytes > ((uint64_t)1 << 32))
            return corrupt(err, errlen, log, "tile size out of range");
        int rc = io_limit_tiff_tile(&r->opt, tw, th, r->block_bytes, (uint64_t)r->row_bytes * r->height, err, errlen);
        if (rc != IP_OK) return rc;
    } else {
        uint32_t rps = 0;
        TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rps);
        if (rps == 0 || rps > r->height) rps = r->height;
        r->bw = r->width;
        r->bh = rps;
        r->across = 1;
        r->block_row_bytes = TIFFScanlineSize64(tif);
        if (r->block_row_bytes != r->row_bytes) return corrupt(err, errlen, log, "strip row size out of range");
        uint64_t down = ((uint64_t)r->height + rps - 1) / rps;
        if ((uint64_t)TIFFNumberOfStrips(tif) < down) return corrupt(err, errlen, log, "fewer strips than the image needs");
    }
    int rc = io_limit_tiff_blocks(&r->opt, r->tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif), r->tiled, err,
                                  errlen);
    if (rc != IP_OK) return rc;
    uint64_t target = band_bytes && band_bytes < BAND_TARGET_BYTES ? band_bytes : BAND_TARGET_BYTES;
    uint64_t per_down = (uint64_t)r->bh * r->row_bytes, want = target / per_down;
    uint64_t total_down = ((uint64_t)r->height + r->bh - 1) / r->bh;
    r->blocks_down_per_band = (uint32_t)(want < 1 ? 1 : want > total_down ? total_down : want);
    return IP_OK;
}

static void reader_close(void *codec)
{
    tiff_stream_reader *r = codec;
    if (!r) return;
    for (int i = 0; r->workers && i < r->threads; i++) {
        if (r->workers[i].tif) TIFFClose(r->workers[i].tif);
        free(r->workers[i].scratch);
    }
    free(r->workers);
    task_pool_destroy(r->pool);
    pthread_mutex_destroy(&r->failed_mu);
    free(r->band.data);
    if (r->decoder) r->decoder->close(r->decoder_state);
    free(r->raw);
    free(r->blocks);
    free(r->block_at);
    free(r->staged);
    free(r->group_len);
    free(r);
}

/* Decodes block b (strip, or tile of the band's rows) into the band buffer, whose first row is
 * image row band_y0. */
static int read_block(tiff_stream_reader *r, tiff_worker *w, uint64_t b, uint32_t band_y0)
{
    uint32_t x0 = (uint32_t)(b % r->across) * r->bw, y0 = (uint32_t)(b / r->across) * r->bh;
    uint32_t rows = r->height - y0 < r->bh ? r->height - y0 : r->bh;
    unsigned char *dst = (unsigned char *)r->band.data + (size_t)(y0 - band_y0) * r->row_bytes;
    w->log = (tiff_log){ .warnings = &r->seen };
    if (!r->tiled) {
        tmsize_t need = (tmsize_t)(rows * r->row_bytes);
        if (r->zero_first) memset(dst, 0, (size_t)need);
        if (TIFFReadEncodedStrip(w->tif, (uint32_t)b, dst, need) < need) return -1;
        tiff_log_went_past(&w->log);
        return 0;
    }
    tmsize_t need = (tmsize_t)(rows * r->block_row_bytes);
    if (r->zero_first) memset(w->scratch, 0, (size_t)r->block_bytes);
    if (TIFFReadEncodedTile(w->tif, (uint32_t)b, w->scratch, (tmsize_t)r->block_bytes) < need) return -1;
    tiff_log_went_past(&w->log);
    size_t px = r->row_bytes / r->width, cols = r->width - x0 < r->bw ? r->width - x0 : r->bw;
    for (uint32_t y = 0; y < rows; y++)
        memcpy(dst + (size_t)y * r->row_bytes + (size_t)x0 * px, w->scratch + (size_t)y * r->block_row_bytes, cols * px);
    return 0;
}

static int band_declined(tiff_stream_reader *r, const char *why)
{
    if (!r->decoded.declined++) snprintf(r->decoded.first_why, sizeof r->decoded.first_why, "%s", why);
    return 0;
}

/* What block b decodes to: a whole tile, or a strip's own rows. */
static size_t block_len(const tiff_stream_reader *r, uint64_t b)
{
    if (r->tiled) return (size_t)r->block_bytes;
    uint32_t y0 = (uint32_t)b * r->bh;
    return (size_t)(r->height - y0 < r->bh ? r->height - y0 : r->bh) * r->row_bytes;
}

/* The band from image row y: its first block, blocks and rows. */
static void band_at(const tiff_stream_reader *r, uint32_t y, uint64_t *first, uint64_t *count, uint32_t *band_rows)
{
    *first = (uint64_t)(y / r->bh) * r->across;
    *band_rows = r->blocks_down_per_band * r->bh;
    if (*band_rows > r->height - y) *band_rows = r->height - y;
    *count = (uint64_t)((*band_rows + r->bh - 1) / r->bh) * r->across;
}

/* Block i of the band, read raw where the decoder placed it, on the pool's thread-th handle. */
static void read_raw_one(void *user, int thread, uint64_t i)
{
    tiff_stream_reader *r = user;
    TIFF *tif = r->workers[thread].tif;
    const tiff_band_block *b = &r->blocks[i];
    tmsize_t got = r->tiled ? TIFFReadRawTile(tif, b->index, r->block_at[i], (tmsize_t)b->raw_len)
                            : TIFFReadRawStrip(tif, b->index, r->block_at[i], (tmsize_t)b->raw_len);
    if (got == (tmsize_t)b->raw_len) return;
    pthread_mutex_lock(&r->failed_mu);
    r->raw_failed = 1;
    pthread_mutex_unlock(&r->failed_mu);
}

/* The band's count blocks read raw: where the decoder places them, on all threads; else one after
 * another into the reader's buffer. 1 when read, 0 when the band goes to libtiff. */
static int read_raw(tiff_stream_reader *r, uint32_t k, uint64_t count)
{
    char why[160] = "";
    if (r->decoder->place) {
        int rc = r->decoder->place(r->decoder_state, k, r->blocks, (uint32_t)count, r->block_at, why, sizeof why);
        if (rc != IP_OK) return band_declined(r, why);
        r->raw_failed = 0;
        task_pool_run(r->pool, count, r->threads, read_raw_one, r);
        if (r->raw_failed) return band_declined(r, "a block that cannot be read raw");
        for (uint64_t i = 0; i < count; i++) r->blocks[i].raw = r->block_at[i];
        r->decoded.placed++;
        return 1;
    }
    size_t at = 0;
    TIFF *tif = r->workers[0].tif;
    for (uint64_t i = 0; i < count; i++) {
        tiff_band_block *b = &r->blocks[i];
        if (b->raw_len > r->raw_cap - at) return band_declined(r, "blocks larger than the decoder's buffer");
        tmsize_t got = r->tiled ? TIFFReadRawTile(tif, b->index, r->raw + at, (tmsize_t)b->raw_len)
                                : TIFFReadRawStrip(tif, b->index, r->raw + at, (tmsize_t)b->raw_len);
        if (got != (tmsize_t)b->raw_len) return band_declined(r, "a block that cannot be read raw");
        b->raw = r->raw + at;
        at += b->raw_len;
    }
    return 1;
}

/* The band from row y read raw and staged as the group's kth: 1 when the decoder took it, 0 to
 * decode it with libtiff (which then also judges a block that could not be read). */
static int stage_band(tiff_stream_reader *r, uint32_t k, uint32_t y)
{
    uint64_t first, count, *sizes = NULL;
    uint32_t band_rows;
    band_at(r, y, &first, &count, &band_rows);
    TIFF *tif = r->workers[0].tif;
    r->decoded.bands++;
    if (!TIFFGetField(tif, r->tiled ? TIFFTAG_TILEBYTECOUNTS : TIFFTAG_STRIPBYTECOUNTS, &sizes) || !sizes)
        return band_declined(r, "no block sizes");
    for (uint64_t i = 0; i < count; i++) {
        uint64_t raw = sizes[first + i];
        if (raw == 0 || raw > SIZE_MAX / 2) return band_declined(r, "blocks larger than the decoder's buffer");
        r->blocks[i] = (tiff_band_block){ (uint32_t)(first + i), NULL, (size_t)raw, block_len(r, first + i) };
    }
    double t0 = now_ms();
    int read = read_raw(r, k, count);
    double t1 = now_ms();
    r->decoded.read_ms += t1 - t0;
    if (!read) return 0;
    char why[160] = "";
    int rc = r->decoder->stage(r->decoder_state, k, r->blocks, (uint32_t)count, band_rows, why, sizeof why);
    r->decoded.decode_ms += now_ms() - t1;
    return rc == IP_OK ? 1 : band_declined(r, why);
}

/* Group g staged from row fill_y on, its bands read raw, then inflated together. */
static void fill_group(tiff_stream_reader *r, uint32_t g)
{
    int *staged = r->staged + (size_t)g * r->group;
    uint32_t k = 0;
    int any = 0;
    for (; k < r->group && r->fill_y < r->height; k++) {
        staged[k] = stage_band(r, g * r->group + k, (uint32_t)r->fill_y);
        any |= staged[k];
        r->fill_y += (uint64_t)r->blocks_down_per_band * r->bh;
    }
    r->group_len[g] = k;
    char why[160] = "";
    double t0 = now_ms();
    int rc = any ? r->decoder->inflate(r->decoder_state, why, sizeof why) : IP_OK;
    r->decoded.decode_ms += now_ms() - t0;
    for (uint32_t i = 0; rc != IP_OK && i < k; i++)
        if (staged[i]) staged[i] = band_declined(r, why);
}

/* The next group to hand out: at first every group staged in turn from row y; then the group
 * after the one just handed out, whose place is staged again with the rows after the others. */
static void next_group(tiff_stream_reader *r, uint32_t y)
{
    if (!r->filled) {
        r->fill_y = y;
        for (uint32_t g = 0; g < r->depth; g++) fill_group(r, g);
        r->filled = 1;
        r->cur = 0;
    } else {
        uint32_t done = r->cur;
        r->cur = (r->cur + 1) % r->depth;
        fill_group(r, done);
    }
    r->cur_next = 0;
}

/* The band from row y, the current group's next: 1 when the decoder gave its rows, 0 for libtiff. */
static int decoded_band(tiff_stream_reader *r, uint32_t y)
{
    if (!r->filled || r->cur_next == r->group_len[r->cur]) next_group(r, y);
    if (r->cur_next == r->group_len[r->cur]) return 0;
    uint32_t k = r->cur * r->group + r->cur_next++;
    if (!r->staged[k]) return 0;
    char why[160] = "";
    double t0 = now_ms();
    int rc = r->decoder->rows(r->decoder_state, k, r->band.data, why, sizeof why);
    r->decoded.decode_ms += now_ms() - t0;
    return rc == IP_OK ? 1 : band_declined(r, why);
}

/* A band's blocks for the pool: block first + item of the band from row band_y0. */
typedef struct {
    tiff_stream_reader *r;
    uint64_t first;
    uint32_t band_y0;
} band_job;

static void read_one(void *user, int thread, uint64_t item)
{
    band_job *j = user;
    tiff_stream_reader *r = j->r;
    tiff_worker *w = &r->workers[thread];
    if (read_block(r, w, j->first + item, j->band_y0) == 0) return;
    pthread_mutex_lock(&r->failed_mu);
    if (j->first + item < r->failed_block) {
        r->failed_block = j->first + item;
        snprintf(r->failed_msg, sizeof r->failed_msg, "%s",
                 tiff_log_text(&w->log, r->tiled ? "tile shorter than expected" : "strip shorter than expected"));
    }
    pthread_mutex_unlock(&r->failed_mu);
}

/* The band's count blocks from first decoded by libtiff on all threads; the first that fails in
 * r->failed_block. */
static void read_blocks(tiff_stream_reader *r, uint64_t first, uint64_t count, uint32_t band_y0)
{
    band_job job = { r, first, band_y0 };
    task_pool_run(r->pool, count, r->threads, read_one, &job);
}

static int reader_next(void *codec, ip_image *rows, int *y0, char *err, size_t errlen)
{
    tiff_stream_reader *r = codec;
    *rows = r->band;
    *y0 = (int)r->next_row;
    rows->shape.height = 0;
    if (r->next_row >= r->height) return IP_OK;
    uint64_t first, count;
    uint32_t band_rows, band_y0 = r->next_row;
    band_at(r, band_y0, &first, &count, &band_rows);
    r->failed_block = UINT64_MAX;
    if (!r->decoder || !decoded_band(r, band_y0)) read_blocks(r, first, count, band_y0);
    if (r->failed_block != UINT64_MAX) {
        snprintf(err, errlen, "truncated or corrupt TIFF: %s (%s %llu)", r->failed_msg, r->tiled ? "tile" : "strip",
                 (unsigned long long)r->failed_block);
        return IP_EFORMAT;
    }
    /* As the whole-image reader: decoded with a warning, or refused under --fail-on warning. */
    if (r->seen.count) {
        int rc = io_warn(&r->opt, r->seen.count, r->seen.first, err, errlen);
        r->seen = (io_warnings){ 0 };
        if (rc) return rc;
    }
    rows->shape.height = (int32_t)band_rows;
    r->next_row += band_rows;
    return IP_OK;
}

/* --page N: each handle reads the Nth directory. */
static int open_page(TIFF *tif, const io_options *opt)
{
    return opt->page == 0 || TIFFSetDirectory(tif, (tdir_t)opt->page);
}

/* Rows a band holds: whole blocks down, but no row past the image's bottom (a tile may be far
 * taller than the image). */
static uint32_t band_height(const tiff_stream_reader *r)
{
    uint64_t rows = (uint64_t)r->blocks_down_per_band * r->bh;
    return rows < r->height ? (uint32_t)rows : r->height;
}

static int reader_block_rows(const void *codec) { return (int)band_height(codec); }

/* The band, twice (decoded, and the compressed blocks the handles read), and each handle's
 * decompressor state (zlib's window and tables, ~0.5 MiB). */
static uint64_t reader_held_bytes(const void *codec)
{
    const tiff_stream_reader *r = codec;
    uint64_t decoder = r->decoder ? r->raw_cap + r->decoder->held_bytes(r->decoder_state) : 0;
    return 2 * (uint64_t)reader_block_rows(codec) * r->row_bytes + (uint64_t)r->threads * ((uint64_t)512 << 10) +
           decoder;
}

static int reader_set_band_decoder(void *codec, const tiff_band_decoder *d, char *why, size_t whylen)
{
    tiff_stream_reader *r = codec;
    void *state = NULL;
    int rc = d->open(d, r->workers[0].tif, r->blocks_down_per_band, &state, why, whylen);
    if (rc != IP_OK) return rc;
    uint32_t group = d->group(state), depth = d->depth ? d->depth(state) : 1;
    if (group < 1 || depth < 1 || group > UINT32_MAX / depth) {
        d->close(state);
        snprintf(why, whylen, "a band decoder that takes no bands");
        return IP_EINVAL;
    }
    size_t n = (size_t)r->blocks_down_per_band * r->across;
    r->raw_cap = d->place ? 0 : d->raw_capacity(state);
    r->raw = d->place ? NULL : malloc(r->raw_cap ? r->raw_cap : 1);
    r->blocks = calloc(n, sizeof *r->blocks);
    r->block_at = calloc(n, sizeof *r->block_at);
    r->staged = calloc((size_t)group * depth, sizeof *r->staged);
    r->group_len = calloc(depth, sizeof *r->group_len);
    if ((!d->place && !r->raw) || !r->blocks || !r->block_at || !r->staged || !r->group_len) {
        d->close(state);
        free(r->raw);
        free(r->blocks);
        free(r->block_at);
        free(r->staged);
        free(r->group_len);
        r->raw = NULL, r->blocks = NULL, r->block_at = NULL, r->staged = NULL, r->group_len = NULL, r->raw_cap = 0;
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    r->decoder = d;
    r->decoder_state = state;
    r->group = group;
    r->depth = depth;
    return IP_OK;
}

static void reader_band_decode_stat(const void *codec, tiff_band_decode_stat *st)
{
    const tiff_stream_reader *r = codec;
    *st = r->decoded;
    if (r->decoder && r->decoder->describe) r->decoder->describe(r->decoder_state, st->steps, sizeof st->steps);
}

/* The next band decoded into dst's rows in place of the reader's own: every decoding path writes
 * through r->band.data, so pointing it at dst for the one call is enough. */
static int reader_next_into(void *codec, ip_image *dst, int *y0, char *err, size_t errlen)
{
    tiff_stream_reader *r = codec;
    if (dst->stride != (ptrdiff_t)r->row_bytes || dst->shape.height < (int32_t)band_height(r)) {
        snprintf(err, errlen, "a band of %u rows of %zu bytes does not fit the rows given", band_height(r), r->row_bytes);
        return IP_EINVAL;
    }
    void *own = r->band.data;
    r->band.data = dst->data;
    int rc = reader_next(codec, dst, y0, err, errlen);
    r->band.data = own;
    return rc;
}

static const io_stream_read_ops read_ops = { reader_next, reader_block_rows, reader_held_bytes, reader_close,
                                             reader_set_band_decoder, reader_band_decode_stat, reader_next_into };

int io_tiff_stream_open(int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape, const io_stream_read_ops **ops,
                        char *err, size_t errlen)
{
    tiff_stream_reader *r = calloc(1, sizeof *r);
    if (r) r->threads = io_thread_count(opt);
    if (r) r->workers = calloc((size_t)r->threads, sizeof *r->workers);
    if (!r || !r->workers) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    r->opt = *opt;
    pthread_mutex_init(&r->failed_mu, NULL);
    /* The header's warnings count once, from the first handle (the others' blocks count as read). */
    r->workers[0].log.warnings = &r->seen;
    /* Cursors live in the workers array, which libtiff points into: it never moves. */
    r->workers[0].cursor = (tiff_fd_cursor){ fd, 0 };
    r->workers[0].tif = tiff_open_shared(&r->workers[0].cursor, &r->workers[0].log);
    int rc = r->workers[0].tif ? IP_OK : corrupt(err, errlen, &r->workers[0].log, "cannot parse the header");
    /* A page that is not there: the whole-image reader says so. */
    if (rc == IP_OK && !open_page(r->workers[0].tif, opt)) rc = unsupported(err, errlen, "no such page");
    if (rc == IP_OK) rc = check_streamable(r->workers[0].tif, shape, err, errlen);
    if (rc == IP_OK) {
        r->width = (uint32_t)shape->width;
        r->height = (uint32_t)shape->height;
        r->row_bytes = img_row_bytes(shape);
        rc = block_layout(r, r->workers[0].tif, &r->workers[0].log, band_bytes, err, errlen);
    }
    if (rc == IP_OK) rc = io_shape_known(opt, shape, io_file_bytes(fd), err, errlen);
    for (int i = 0; rc == IP_OK && i < r->threads; i++)
        if (r->tiled && !(r->workers[i].scratch = malloc((size_t)r->block_bytes))) rc = IP_ENOMEM;
    for (int i = 1; rc == IP_OK && i < r->threads; i++) {
        tiff_worker *w = &r->workers[i];
        w->cursor = (tiff_fd_cursor){ fd, 0 };
        if (!(w->tif = tiff_open_shared(&w->cursor, &w->log)) || !open_page(w->tif, opt))
            rc = corrupt(err, errlen, &w->log, "cannot reopen");
    }
    ip_shape band = *shape;
    band.height = (int32_t)band_height(r);
    if (rc == IP_ENOMEM) snprintf(err, errlen, "out of memory");
    if (rc == IP_OK && task_pool_create(&r->pool, r->threads, err, errlen) != 0) rc = IP_ENOMEM;
    if (rc == IP_OK) rc = img_alloc(&r->band, &band, UINT64_MAX, err, errlen);
    if (rc != IP_OK) {
        reader_close(r);
        return rc;
    }
    *codec = r;
    *ops = &read_ops;
    return IP_OK;
}

/* Strips in flight: two a thread, and a batch a batch state and one queued, fewer where the run's
 * --memory asks (stream_hold_bytes). */
static tiff_strips_plan stream_plan(const tiff_strip_format *f, const io_options *opt)
{
    return tiff_strips_plan_with(f, io_thread_count(opt), opt->stream_hold_bytes, opt->tiff_strip_batch);
}

static uint32_t stream_rows_per_strip(const ip_shape *shape, const io_options *opt)
{
    return tiff_strips_rows_with(shape, tiff_rows_per_strip(shape), opt->tiff_strip_batch);
}

/* The compressor's strips in flight and its threads' states, and a row. */
uint64_t io_tiff_stream_write_bytes(const ip_shape *shape, const io_options *opt)
{
    tiff_strip_format f = { *shape, stream_rows_per_strip(shape, opt), opt->tiff_compression, opt->tiff_level, NULL };
    tiff_strips_plan plan = stream_plan(&f, opt);
    return tiff_strips_held_bytes(&f, &plan) + img_row_bytes(shape);
}

/* Writing: rows gather into a buffer of the strip compressor (io_tiff_strips.h), which
 * compresses whole strips on its threads while the next rows arrive and writes them out. */
typedef struct {
    int fd;
    TIFF *out;
    tiff_log log;
    ip_shape shape;
    size_t row_bytes;
    uint32_t rps, strips, next_strip;
    tiff_raw_out raw;          /* out, for the compressor's writes */
    tiff_strips *compressor;
    unsigned char *strip;      /* the claimed buffer, while rows gather in it */
    uint32_t strip_rows;       /* rows gathered */
    const io_meta *meta;       /* the input's metadata for the output, as the whole-image writer */
} tiff_stream_writer;

static void writer_free(tiff_stream_writer *w)
{
    tiff_strips_close(w->compressor);
    free(w);
}

static int failed(int rc, const char *why, char *err, size_t errlen)
{
    snprintf(err, errlen, "cannot write TIFF: %s", why);
    return rc;
}

/* The gathered rows (a whole strip, or the image's last rows) go to be compressed. */
static int submit_strip(tiff_stream_writer *w, char *err, size_t errlen)
{
    char why[512];
    int rc = tiff_strips_submit(w->compressor, (size_t)w->strip_rows * w->row_bytes, why, sizeof why);
    w->strip = NULL;
    w->strip_rows = 0;
    w->next_strip++;
    return rc == IP_OK ? IP_OK : failed(rc, why, err, errlen);
}

static int writer_write(void *codec, const ip_image *rows, char *err, size_t errlen)
{
    tiff_stream_writer *w = codec;
    char why[512];
    for (int y = 0; y < rows->shape.height; y++) {
        int rc = w->strip ? IP_OK : tiff_strips_claim(w->compressor, &w->strip, why, sizeof why);
        if (rc != IP_OK) return failed(rc, why, err, errlen);
        memcpy(w->strip + (size_t)w->strip_rows * w->row_bytes, (const char *)rows->data + (ptrdiff_t)y * rows->stride,
               w->row_bytes);
        if (++w->strip_rows == w->rps && (rc = submit_strip(w, err, errlen)) != IP_OK) return rc;
    }
    return IP_OK;
}

static int close_out(tiff_stream_writer *w, int rc, char *err, size_t errlen)
{
    char why[128];
    /* the compressor's threads write to out: they end first */
    tiff_strips_close(w->compressor);
    w->compressor = NULL;
    if (w->out) TIFFClose(w->out);
    w->out = NULL;
    if (rc == IP_OK) rc = meta_tiff_finish(w->fd, w->meta, err, errlen);
    if (close(w->fd) != 0 && rc == IP_OK) {
        snprintf(err, errlen, "cannot write TIFF: %s", io_strerror(errno, why, sizeof why));
        rc = IP_EIO;
    }
    writer_free(w);
    return rc;
}

static int writer_finish(void *codec, char *err, size_t errlen)
{
    tiff_stream_writer *w = codec;
    char why[512];
    int rc = w->strip_rows ? submit_strip(w, err, errlen) : IP_OK;
    if (rc == IP_OK && (rc = tiff_strips_finish(w->compressor, why, sizeof why)) != IP_OK)
        rc = failed(rc, why, err, errlen);
    if (rc == IP_OK && w->next_strip != w->strips) {
        snprintf(err, errlen, "cannot write TIFF: %u of %u strips were written", w->next_strip, w->strips);
        rc = IP_EINVAL;
    }
    if (rc == IP_OK && !TIFFFlush(w->out)) {
        snprintf(err, errlen, "cannot write TIFF: %s", tiff_log_text(&w->log, "write error"));
        rc = IP_EIO;
    }
    return close_out(w, rc, err, errlen);
}

static void writer_abort(void *codec)
{
    char err[8];
    close_out(codec, IP_EIO, err, sizeof err);
}

static const io_stream_write_ops write_ops = { writer_write, writer_finish, writer_abort };

static int writer_setup(tiff_stream_writer *w, const io_options *opt, char *err, size_t errlen)
{
    w->row_bytes = img_row_bytes(&w->shape);
    w->rps = stream_rows_per_strip(&w->shape, opt);
    w->strips = (uint32_t)(((uint64_t)w->shape.height + w->rps - 1) / w->rps);
    if (!TIFFIsCODECConfigured(tiff_scheme(opt->tiff_compression))) {
        snprintf(err, errlen, "cannot write TIFF: this libtiff has no %s compression; choose another "
                 "--tiff-compression", io_tiff_compression_name(opt->tiff_compression));
        return IP_EINVAL;
    }
    if (!tiff_set_image_tags(w->out, &w->shape, w->rps, opt->tiff_compression) ||
        !meta_tiff_set_tags(w->out, w->meta, &w->shape)) {
        snprintf(err, errlen, "cannot write TIFF: %s", tiff_log_text(&w->log, "bad tags"));
        return IP_EIO;
    }
    tiff_strip_format f = { w->shape, w->rps, opt->tiff_compression, opt->tiff_level, NULL };
    w->raw = (tiff_raw_out){ w->out, &w->log };
    tiff_strips_plan plan = stream_plan(&f, opt);
    char why[512];
    int rc = tiff_strips_open(&w->compressor, tiff_strip_codec_for(opt), &f, &plan, tiff_write_raw_strip, &w->raw, why,
                              sizeof why);
    return rc == IP_OK ? IP_OK : failed(rc, why, err, errlen);
}

int io_tiff_stream_create(int fd, const ip_shape *shape, const io_options *opt, void **codec,
                          const io_stream_write_ops **ops, char *err, size_t errlen)
{
    char why[128];
    tiff_stream_writer *w = calloc(1, sizeof *w);
    if (!w) {
        close(fd);
        snprintf(err, errlen, "cannot write TIFF: out of memory");
        return IP_ENOMEM;
    }
    w->fd = fd;
    w->shape = *shape;
    w->meta = opt->meta;
    int tfd = dup(fd);
    w->out = tfd >= 0 ? tiff_open_fd_write(tfd, tiff_wants_bigtiff(shape, opt->tiff_bigtiff_above) ? "w8" : "w", &w->log)
                      : NULL;
    if (!w->out) {
        snprintf(err, errlen, "cannot write TIFF: %s",
                 tfd < 0 ? io_strerror(errno, why, sizeof why) : tiff_log_text(&w->log, "out of memory"));
        if (tfd >= 0) close(tfd);
        return close_out(w, IP_EIO, err, errlen);
    }
    int rc = writer_setup(w, opt, err, errlen);
    if (rc != IP_OK) {
        char ignored[8];
        close_out(w, rc, ignored, sizeof ignored);
        return rc;
    }
    *codec = w;
    *ops = &write_ops;
    return IP_OK;
}
