/* One image's run as the command line tells it: the device line, what was decoded past, notes,
 * the GPU failure that sent the image to the CPU, and --profile's table. */
#include "cli/cli_print.h"
#include <stdio.h>
#include <string.h>
#include "base/image.h"
#include "gpu/gpu.h"
#include "stream/stream_budget.h"

void cli_warn_decoded(const cli_options *o, const char *path, const io_warnings *w)
{
    if (w->count > 1) cli_say(o, "warning: %s: %s (decoded anyway; %d warnings)", path, w->first, w->count);
    else if (w->count == 1) cli_say(o, "warning: %s: %s (decoded anyway)", path, w->first);
}

static void say_device(const cli_options *o, const run_result *res)
{
    char name[256] = "GPU";
    const char *why = res->why;
    int has_why = why[0] != '\0';
    if (res->device == EXEC_GPU) {
        gpu_device_name(res->gpu, name, sizeof name);
        cli_say(o, "device: GPU %d (%s)%s%s%s%s", res->gpu, name,
                o->run.transfer == EXEC_ZEROCOPY ? ", zero-copy transfers" : "", has_why ? " (" : "", why,
                has_why ? ")" : "");
    } else {
        cli_say(o, "device: CPU, %d threads%s%s%s", run_cpu_threads(&o->run), has_why ? " (" : "", why, has_why ? ")" : "");
    }
}

static void say_stream_device(const cli_options *o, const run_result *res)
{
    const run_stream_options *so = &res->stream_options;
    char limit[32], gpu_limit[32], name[256] = "GPU", workers[48] = "";
    const char *why = res->why;
    stream_bytes_text(so->memory_limit, limit, sizeof limit);
    if (so->n_workers > 1) snprintf(workers, sizeof workers, "; %d workers", so->n_workers);
    if (so->place == BAND_ON_HOST) {
        cli_say(o, "device: CPU, %d threads (streamed in bands within %s%s%s%s)", run_cpu_threads(&o->run), limit,
                workers, why[0] ? "; " : "", why);
        return;
    }
    stream_bytes_text(so->gpu_memory_limit, gpu_limit, sizeof gpu_limit);
    gpu_device_name(so->gpu_ids[0], name, sizeof name);
    cli_say(o, "device: GPU %d (%s) (streamed in bands within %s, %s of GPU memory%s%s%s)", so->gpu_ids[0], name,
            limit, gpu_limit, workers, why[0] ? "; " : "", why);
}

static void print_jpeg_open(const run_result *res)
{
    const jpeg_gpu_open_times *j = &res->jpeg_times;
    fprintf(stderr, "  %-22s %9.3f ms (in start-up: library %.1f, handle %.1f in %d tries, decoder %.1f, "
            "encoder %.1f; %s)\n", "nvJPEG open", j->library_ms + j->handle_ms + j->decoder_ms + j->encoder_ms,
            j->library_ms, j->handle_ms, j->handle_tries, j->decoder_ms, j->encoder_ms, res->jpeg_description);
}

static void print_profile(const plan *p, const run_result *res)
{
    const exec_profile *prof = &res->prof;
    const run_times *t = &res->times;
    exec_device dev = res->device;
    fprintf(stderr, "profile:\n");
    if (dev == EXEC_GPU)
        fprintf(stderr, "  %-22s %9.3f ms (beside decoding; waited %.3f ms for it)\n", "gpu start-up", t->startup_ms,
                t->startup_wait_ms);
    if (res->has_jpeg_times) print_jpeg_open(res);
    fprintf(stderr, "  %-22s %9.3f ms\n", "decode", t->decode_ms);
    if (t->fuse_compiled)
        fprintf(stderr, "  %-22s %9.3f ms (beside decoding: %d fused kernel%s compiled by NVRTC, cached)\n",
                "fusion compile", t->fuse_ms, t->fuse_compiled, t->fuse_compiled == 1 ? "" : "s");
    if (dev == EXEC_GPU) fprintf(stderr, "  %-22s %9.3f ms\n", "upload", prof->upload_ms);
    for (int i = 0; i < prof->n_stages; i++) {
        char label[64];
        snprintf(label, sizeof label, "%s (%s)", p->steps[i].plugin->stage->name,
                 prof->stage_fused[i] > 0 ? "gpu, fused" : prof->stage_on_gpu[i] ? "gpu" :
                 dev == EXEC_GPU ? "cpu, round trip" : "cpu");
        if (prof->stage_fused[i] < 0) fprintf(stderr, "  %-22s %9s    (in the fused kernel above)\n", label, "");
        else fprintf(stderr, "  %-22s %9.3f ms\n", label, prof->stage_ms[i]);
    }
    if (dev == EXEC_GPU) fprintf(stderr, "  %-22s %9.3f ms\n", "download", prof->download_ms);
    fprintf(stderr, "  %-22s %9.3f ms\n", "run (wall)", prof->total_ms);
    fprintf(stderr, "  %-22s %9.3f ms\n", "encode", t->encode_ms);
}

static void print_workers(const stream_profile *pr, band_place place)
{
    for (int i = 0; pr->n_workers > 1 && i < pr->n_workers; i++) {
        char label[32];
        if (place == BAND_ON_GPU) snprintf(label, sizeof label, "worker %d (GPU %d)", i, pr->workers[i].gpu);
        else snprintf(label, sizeof label, "worker %d", i);
        fprintf(stderr, "  %-22s %9.3f ms busy, %d chunk%s\n", label, pr->workers[i].busy_ms, pr->workers[i].chunks,
                pr->workers[i].chunks == 1 ? "" : "s");
    }
    /* filling waits while the encoder is behind; emitting waits while the workers or the decoder are */
    if (pr->n_workers > 1)
        fprintf(stderr, "  %-22s %9.3f ms filling waited for a free slot, %.3f ms emitting waited for the workers\n",
                "chunks", pr->chunk_waits.fill_wait_ms, pr->chunk_waits.emit_wait_ms);
}

static void print_stream_profile(const plan *p, const run_result *res)
{
    const run_stream_report *rep = &res->stream_report;
    const stream_profile *pr = &rep->prof;
    band_place place = res->stream_options.place;
    double sum = pr->source_ms + pr->sink_ms;
    char dealt[96] = "";
    if (rep->chunk_rows) snprintf(dealt, sizeof dealt, ", chunks of %d rows dealt to %d workers", rep->chunk_rows, pr->n_workers);
    fprintf(stderr, "profile (streamed in bands of %d rows%s, %d segment%s%s):\n", rep->band_rows, dealt, pr->segments,
            pr->segments == 1 ? "" : "s", pr->overlapped ? "; decode and encode on threads of their own" : "");
    fprintf(stderr, "  %-22s %9.3f ms\n", "decode", pr->source_ms);
    for (int i = 0; i < pr->n_stages; i++) {
        char label[64];
        snprintf(label, sizeof label, "%s (%s)", p->steps[i].plugin->stage->name,
                 pr->stage_on_gpu[i] ? "gpu" : place == BAND_ON_GPU ? "cpu, round trip" : "cpu");
        fprintf(stderr, "  %-22s %9.3f ms\n", label, pr->stage_ms[i]);
        sum += pr->stage_ms[i];
    }
    fprintf(stderr, "  %-22s %9.3f ms\n", "encode", pr->sink_ms);
    fprintf(stderr, "  %-22s %9.3f ms (sum of the steps %.3f ms: overlap %.2fx)\n", "run (wall)", pr->wall_ms, sum,
            pr->wall_ms > 0 ? sum / pr->wall_ms : 0.0);
    /* where the stages' thread stood still: the slower of decode and encode shows here; band
     * workers write their rows from a thread of their own, counted in encode */
    if (pr->overlapped && pr->n_workers > 1 && pr->sink_wait_ms == 0)
        fprintf(stderr, "  %-22s %9.3f ms waiting for decoded bands (their rows go to the writer from their own thread)\n",
                "chunks' threads", pr->source_wait_ms);
    else if (pr->overlapped)
        fprintf(stderr, "  %-22s %9.3f ms waiting for decoded bands, %.3f ms handing rows to the encoder\n",
                pr->n_workers > 1 ? "chunks' threads" : "stages' thread", pr->source_wait_ms, pr->sink_wait_ms);
    print_workers(pr, place);
    if (place != BAND_ON_GPU) return;
    char planned[32], limit[32];
    stream_bytes_text(rep->planned_device_bytes, planned, sizeof planned);
    stream_bytes_text(res->stream_options.gpu_memory_limit, limit, sizeof limit);
    fprintf(stderr, "  gpu memory: peak %.1f MiB (bands sized to %s, within %s)\n",
            (double)pr->gpu_peak_bytes / 1048576.0, planned, limit);
    const tiff_gpu_strips_stat *g = &rep->gpu_strips;
    const ip_shape *out = &p->steps[p->n - 1].out;
    double rows = (double)img_row_bytes(out) * (double)out->height;
    const tiff_band_decode_stat *b = &rep->gpu_bands;
    if (b->bands)
        fprintf(stderr, "  %-22s %llu of %llu bands inflated on the GPU%s%s\n", "TIFF bands on GPU",
                (unsigned long long)(b->bands - b->declined), (unsigned long long)b->bands,
                b->declined ? ", the others by libtiff; the first because: " : "", b->declined ? b->first_why : "");
    if (b->bands)
        fprintf(stderr, "  %-22s raw reads %.0f ms (%llu bands on every thread, straight to the GPU's staging), "
                "decoder %.0f ms (%s)\n", "", b->read_ms, (unsigned long long)b->placed, b->decode_ms,
                b->steps[0] ? b->steps : "no account");
    if (g->states)
        fprintf(stderr, "  %-22s %llu strips (%.1f%% of the rows) in %llu pieces, %llu batches on %d streams, "
                "%.1f -> %.1f MB, %.3f ms busy\n", "TIFF strips on GPU", (unsigned long long)g->strips,
                rows > 0 ? 100.0 * (double)g->bytes_in / rows : 0.0, (unsigned long long)g->pieces,
                (unsigned long long)g->batches, g->states,
                (double)g->bytes_in / 1e6, (double)g->bytes_out / 1e6, g->busy_ms);
}

static void say_notes(const cli_options *o, const char *notes)
{
    for (const char *line = notes; *line;) {
        size_t len = strcspn(line, "\n");
        cli_say(o, "%.*s", (int)len, line);
        line += len + (line[len] == '\n');
    }
}

static int say_failure(const char *in_path, const run_result *res, const char *err)
{
    if (res->failed_path) cli_fail("%s: %s", res->failed_path, err);
    else cli_fail("%s", err);
    (void)in_path;
    return res->usage_error ? CLI_USAGE : CLI_IMAGE_FAILED;
}

int cli_print_run(const cli_options *o, const plan *p, const char *in_path, const run_result *res, int rc,
                  const char *err)
{
    if (res->streamed) say_stream_device(o, res);
    else if (res->decoded) cli_warn_decoded(o, in_path, &res->warnings);
    say_notes(o, res->notes);
    if (!res->streamed && res->decoded) say_device(o, res);
    if (res->fallback[0])
        fprintf(stderr, "imgpipe: warning: %s: %s; running this image on the CPU\n", in_path, res->fallback);
    if (rc != IP_OK) return say_failure(in_path, res, err);
    if (res->streamed) cli_warn_decoded(o, in_path, &res->warnings);
    if (o->verbose && res->stream_why[0]) cli_say(o, "%s: %s", in_path, res->stream_why);
    if (o->run.profile) {
        if (res->streamed) print_stream_profile(p, res);
        else print_profile(p, res);
    }
    return CLI_OK;
}
