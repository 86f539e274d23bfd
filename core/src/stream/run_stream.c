#include "stream/run_stream.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/image.h"
#include "io/io_stream.h"
#include "stream/stream_budget.h"

struct run_stream {
    plan *p;
    const char *in_path, *out_path;
    run_stream_options o;
    io_stream_reader *reader;
    ip_shape in_shape;        /* the reader's rows */
    int band_rows, chunk_rows;
    uint64_t planned_bytes, planned_device_bytes;
};

static int reader_next(void *user, ip_image *rows, int *y0, char *err, size_t errlen)
{
    return io_stream_next(user, rows, y0, err, errlen);
}

static int reader_next_into(void *user, ip_image *dst, int *y0, char *err, size_t errlen)
{
    return io_stream_next_into(user, dst, y0, err, errlen);
}

/* The reader as the run's source; decoding into the caller's rows where the reader can. */
static stream_source reader_source(const run_stream *rs)
{
    stream_source src = { reader_next, rs->reader, NULL, rs->in_shape };
    if (io_stream_reads_into(rs->reader)) {
        src.next_into = reader_next_into;
        src.band.height = io_stream_block_rows(rs->reader);
    }
    return src;
}

/* The output: in bands to a streaming writer, or gathered whole for a format written whole. The
 * streaming writer is made on a thread of its own while the first bands are read and run (a
 * TIFF's card states took 0.10-0.13 s to open on the H200, before any band could start); the
 * first rows wait for it. */
typedef struct {
    io_stream_writer *writer;
    stream_image_sink whole;
    const char *path;
    const ip_shape *shape;
    const io_options *io;
    pthread_t maker;
    int streams, making, made_rc;
    int failed;   /* the writer failed: the output's error, not the input's */
    char made_err[1024];
} output;

static void *make_writer(void *arg)
{
    output *out = arg;
    out->made_rc = io_stream_create(out->path, out->shape, out->io, &out->writer, out->made_err, sizeof out->made_err);
    return NULL;
}

static void start_writer(output *out)
{
    out->making = pthread_create(&out->maker, NULL, make_writer, out) == 0;
    if (!out->making) make_writer(out);   /* no thread: made here, as before */
}

/* The writer, once made; its failure (said in err, unless NULL) is the run's. */
static int writer_made(output *out, char *err, size_t errlen)
{
    if (out->making) pthread_join(out->maker, NULL);
    out->making = 0;
    if (out->made_rc != IP_OK && err) snprintf(err, errlen, "%s", out->made_err);
    return out->made_rc;
}

static int output_rows(void *user, const ip_image *rows, int y0, char *err, size_t errlen)
{
    output *out = user;
    if (out->streams) {
        int rc = writer_made(out, err, errlen);
        if (rc == IP_OK) rc = io_stream_write(out->writer, rows, y0, err, errlen);
        out->failed |= rc != IP_OK;
        return rc;
    }
    band_sink s = stream_sink_of_image(&out->whole);
    return s.rows(s.user, rows, y0, err, errlen);
}

/* After the stream: the writer finished, or removed (with what it wrote) where the run failed. */
static int finish_writer(output *out, int rc, char *err, size_t errlen)
{
    int made = writer_made(out, rc == IP_OK ? err : NULL, errlen);
    if (rc == IP_OK && made != IP_OK) {
        out->failed = 1;
        rc = made;
    }
    if (!out->writer) return rc;
    if (rc != IP_OK) {
        io_stream_abort(out->writer);
        return rc;
    }
    rc = io_stream_finish(out->writer, err, errlen);
    out->failed |= rc != IP_OK;
    return rc;
}

/* Bands queued on each side of the stages, the one in use included: decoding and encoding run
 * on threads of their own (stream_overlap.h). */
#define OVERLAP_SLOTS 2

/* What the codecs hold besides the stages' bands: the reader (its band, its decoder), the
 * writer's group of bands or the whole output for a format written whole, and the decoded bands
 * queued for the stages. The bands queued for the encoder follow the band height: OVERLAP_SLOTS
 * output rows for each row of a band. */
static uint64_t codec_bytes(const run_stream *rs, const ip_shape *in, const ip_shape *out)
{
    uint64_t block = (uint64_t)io_stream_block_rows(rs->reader) * img_row_bytes(in);
    uint64_t out_bytes = io_stream_writes(io_format_from_ext(rs->out_path))
                             ? io_stream_write_bytes(rs->out_path, out, &rs->o.io)
                             : (uint64_t)img_row_bytes(out) * (uint64_t)out->height;
    return io_stream_held_bytes(rs->reader) + out_bytes + OVERLAP_SLOTS * block;
}

int run_stream_open(run_stream **out, plan *p, io_input *in, const char *in_path, const char *out_path,
                    const run_stream_options *o, ip_shape *in_shape, char *err, size_t errlen)
{
    *out = NULL;
    run_stream *rs = calloc(1, sizeof *rs);
    if (!rs) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    *rs = (run_stream){ .p = p, .in_path = in_path, .out_path = out_path, .o = *o };
    /* a PNG or JPEG writer compresses fewer bands at once rather than pass a quarter of the limit */
    if (!rs->o.io.stream_hold_bytes) rs->o.io.stream_hold_bytes = o->memory_limit / 4;
    /* a thirty-second of the limit for the decoder's band, held four times at most (decoded,
     * its compressed blocks, two queued for the stages): the rest for the stages and the writer */
    int rc = io_stream_open_input(in, &o->io, o->memory_limit / 32, &rs->reader, in_shape, err, errlen);
    ip_shape final;
    /* a pipeline that cannot take the image, or an output that cannot hold the result, is an error
     * of its own (IP_EINVAL, worded as the whole-image path words it), not a file to read whole */
    if (rc == IP_OK && (rc = plan_shapes(p, in_shape, &final, err, errlen)) != IP_OK) rc = IP_EINVAL;
    if (rc == IP_OK && io_check_writable(io_format_from_ext(out_path), &final, err, errlen) != IP_OK) {
        char why[768];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "%s: %s", out_path, why);
        rc = IP_EINVAL;
    }
    if (rc != IP_OK) {
        run_stream_cancel(rs);
        return rc;
    }
    rs->in_shape = *in_shape;
    *out = rs;
    return IP_OK;
}

void run_stream_set_placement(run_stream *rs, const run_stream_options *o)
{
    rs->o.place = o->place;
    rs->o.n_workers = o->n_workers;
    rs->o.gpu_memory_limit = o->gpu_memory_limit;
    rs->o.threads = o->threads;
    rs->o.io.tiff_strip_batch = o->io.tiff_strip_batch;
    memcpy(rs->o.gpu_ids, o->gpu_ids, sizeof rs->o.gpu_ids);
}

int run_stream_set_band_decoder(run_stream *rs, const tiff_band_decoder *d, char *why, size_t whylen)
{
    return io_stream_set_band_decoder(rs->reader, d, why, whylen);
}

uint64_t run_stream_whole_bytes(const run_stream *rs) { return stream_whole_image_bytes(rs->p); }

int run_stream_budget(run_stream *rs, char *err, size_t errlen)
{
    band_layout l = { 0 };
    int rc = band_layout_make(rs->p, &l, err, errlen);
    const ip_shape *final = &rs->p->steps[rs->p->n - 1].out;
    uint64_t fixed = codec_bytes(rs, &rs->p->steps[0].in, final);
    uint64_t queued_row = OVERLAP_SLOTS * (uint64_t)img_row_bytes(final);
    stream_budget b = { rs->o.memory_limit, fixed, queued_row, rs->o.place, rs->o.gpu_memory_limit, rs->o.n_workers };
    if (rc == IP_OK) rc = stream_band_rows_for(rs->p, &l, &b, &rs->band_rows, err, errlen);
    if (rc == IP_OK) rs->chunk_rows = stream_chunk_rows_for(rs->p, &l, &b, rs->band_rows);
    if (rc == IP_OK && rs->o.place == BAND_ON_GPU)
        rs->planned_device_bytes = stream_device_bytes(rs->p, &l, rs->o.n_workers, rs->band_rows);
    band_layout_free(&l);
    rs->planned_bytes = fixed + (uint64_t)rs->band_rows * queued_row;
    return rc;
}

int run_stream_finish(run_stream *rs, run_stream_report *rep, char *err, size_t errlen)
{
    const ip_shape *final = &rs->p->steps[rs->p->n - 1].out;
    output out = { .path = rs->out_path, .shape = final, .io = &rs->o.io };
    out.streams = io_stream_writes(io_format_from_ext(rs->out_path));
    int rc = out.streams ? IP_OK : stream_image_sink_init(&out.whole, final, err, errlen);
    if (out.streams) start_writer(&out);
    stream_source src = reader_source(rs);
    band_sink sink = { output_rows, &out };
    stream_options so = { rs->band_rows, rs->o.threads, rs->in_path, rs->o.place, rs->o.n_workers, { 0 },
                          OVERLAP_SLOTS, rs->band_rows, rs->chunk_rows };
    memcpy(so.gpu_ids, rs->o.gpu_ids, sizeof so.gpu_ids);
    memset(rep, 0, sizeof *rep);
    if (rc == IP_OK) rc = stream_run(rs->p, &src, &sink, &so, &rep->prof, err, errlen);
    if (out.streams) rc = finish_writer(&out, rc, err, errlen);
    else if (rc == IP_OK) {
        rc = io_write(rs->out_path, &out.whole.img, &rs->o.io, err, errlen);
        out.failed = rc != IP_OK;
    }
    rep->output_failed = out.failed;
    img_free(&out.whole.img);
    rep->band_rows = rs->band_rows;
    rep->chunk_rows = rs->o.n_workers > 1 ? rs->chunk_rows : 0;
    rep->planned_bytes = rs->planned_bytes;
    rep->planned_device_bytes = rs->planned_device_bytes;
    io_stream_band_decode_stat(rs->reader, &rep->gpu_bands);
    run_stream_cancel(rs);
    return rc;
}

void run_stream_cancel(run_stream *rs)
{
    if (!rs) return;
    io_stream_close(rs->reader);
    free(rs);
}
