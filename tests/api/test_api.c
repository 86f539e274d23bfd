/* The C API through libimgpipe.so: every function, its errors, host images of every sample type
 * and odd shapes against reference loops, the same output as the command line, one pipeline on
 * eight threads, folders with progress, failures and cancelling. */
#define _POSIX_C_SOURCE 200809L
#include <png.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include "api_check.h"

static char tmp[256];

static void test_version(void)
{
    CHECK(imgpipe_version_number() == IMGPIPE_VERSION, "%d", imgpipe_version_number());
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", IMGPIPE_VERSION_MAJOR, IMGPIPE_VERSION_MINOR, IMGPIPE_VERSION_PATCH);
    CHECK(strcmp(imgpipe_version(), want) == 0, "%s against %s", imgpipe_version(), want);
    for (int c = 0; c <= IMGPIPE_EFAILED; c++) CHECK(imgpipe_status_text(c)[0], "code %d has no text", c);
    CHECK(strcmp(imgpipe_status_text(IMGPIPE_ENOMEM), "out of memory") == 0, "%s", imgpipe_status_text(IMGPIPE_ENOMEM));
}

static void expect_text_error(const char *text, int line, int column, const char *suggestion, const char *words)
{
    imgpipe_pipeline *p = (imgpipe_pipeline *)1;
    imgpipe_error e;
    int rc = imgpipe_pipeline_from_text(&p, text, &e);
    CHECK(rc == IMGPIPE_EPIPELINE && e.code == rc, "'%s': rc %d: %s", text, rc, e.message);
    CHECK(p == NULL, "'%s': p is left set", text);
    CHECK(strcmp(e.file, "<text>") == 0, "'%s': file '%s'", text, e.file);
    CHECK(e.line == line && e.column == column, "'%s': at %d:%d, not %d:%d (%s)", text, e.line, e.column, line, column,
          e.message);
    CHECK(strcmp(e.suggestion, suggestion) == 0, "'%s': suggestion '%s', not '%s'", text, e.suggestion, suggestion);
    CHECK(strstr(e.message, words) != NULL, "'%s': message '%s' lacks '%s'", text, e.message, words);
    char where[64];
    snprintf(where, sizeof where, "<text>:%d:%d: ", line, column);
    CHECK(strncmp(e.message, where, strlen(where)) == 0, "'%s': message '%s' does not start with %s", text, e.message, where);
}

static void test_pipeline_errors(void)
{
    expect_text_error("grayscale | medain radius=1", 1, 13, "median", "unknown stage 'medain'");
    expect_text_error("grayscale\nmedian radus=2", 2, 8, "radius", "unknown parameter 'radus'");
    expect_text_error("median radius=abc", 1, 15, "", "radius expects an integer");
    expect_text_error("median border=replicat", 1, 15, "replicate", "border must be one of");
    expect_text_error("", 1, 1, "", "empty pipeline");
    imgpipe_error e;
    imgpipe_pipeline *p;
    char path[512];
    snprintf(path, sizeof path, "%s/missing.pipe", tmp);
    CHECK(imgpipe_pipeline_from_file(&p, path, &e) == IMGPIPE_EIO, "%s", e.message);
    CHECK(strcmp(e.path, path) == 0 && strstr(e.message, "missing.pipe"), "path '%s', message '%s'", e.path, e.message);
    snprintf(path, sizeof path, "%s/bad.pipe", tmp);
    FILE *f = fopen(path, "w");
    fputs("# a comment\ngrayscale\nmedian radius=1 bordr=zero\n", f);
    fclose(f);
    CHECK(imgpipe_pipeline_from_file(&p, path, &e) == IMGPIPE_EPIPELINE, "%s", e.message);
    CHECK(strcmp(e.file, path) == 0 && e.line == 3 && e.column == 17 && strcmp(e.suggestion, "border") == 0,
          "%s:%d:%d '%s': %s", e.file, e.line, e.column, e.suggestion, e.message);
    snprintf(path, sizeof path, "%s/good.pipe", tmp);
    f = fopen(path, "w");
    fputs("grayscale   # to one channel\nmedian radius=1\n", f);
    fclose(f);
    CHECK(imgpipe_pipeline_from_file(&p, path, &e) == IMGPIPE_OK && e.code == 0 && !e.message[0], "%s", e.message);
    imgpipe_pipeline_close(p);
    imgpipe_pipeline_close(NULL);
    CHECK(imgpipe_pipeline_from_text(NULL, "median", &e) == IMGPIPE_EINVAL, "NULL p");
    CHECK(imgpipe_pipeline_from_text(&p, NULL, NULL) == IMGPIPE_EINVAL, "NULL text, NULL err");
}

static void test_stages(void)
{
    imgpipe_error e;
    int n = imgpipe_stage_count(&e);
    CHECK(n >= 7, "%d stages: %s", n, e.message);
    int seen_median = 0;
    for (int i = 0; i < n; i++) {
        imgpipe_stage_info s;
        CHECK(imgpipe_stage_at(i, &s, &e) == IMGPIPE_OK && s.name && s.summary, "%d: %s", i, e.message);
        for (int k = 0; k < s.n_params; k++)
            CHECK(s.params[k].name && s.params[k].type && s.params[k].default_value && s.params[k].choices && s.params[k].help,
                  "%s param %d has a NULL string", s.name, k);
        seen_median += strcmp(s.name, "median") == 0;
    }
    CHECK(seen_median == 1, "median listed %d times", seen_median);
    imgpipe_stage_info s;
    CHECK(imgpipe_stage_find("median", &s, &e) == IMGPIPE_OK, "%s", e.message);
    int radius = -1, border = -1;
    for (int k = 0; k < s.n_params; k++) {
        if (strcmp(s.params[k].name, "radius") == 0) radius = k;
        if (strcmp(s.params[k].name, "border") == 0) border = k;
    }
    CHECK(radius >= 0 && strcmp(s.params[radius].type, "int") == 0 && strcmp(s.params[radius].default_value, "1") == 0,
          "median radius: %s %s", radius >= 0 ? s.params[radius].type : "-", radius >= 0 ? s.params[radius].default_value : "-");
    CHECK(radius >= 0 && strstr(s.params[radius].choices, ".."), "radius range '%s'", radius >= 0 ? s.params[radius].choices : "");
    CHECK(border >= 0 && strcmp(s.params[border].type, "enum") == 0 && strstr(s.params[border].choices, "replicate|"),
          "median border: '%s'", border >= 0 ? s.params[border].choices : "-");
    CHECK(imgpipe_stage_find("medain", &s, &e) == IMGPIPE_EINVAL && strcmp(e.suggestion, "median") == 0, "%s / %s",
          e.message, e.suggestion);
    CHECK(imgpipe_stage_at(n, &s, &e) == IMGPIPE_EINVAL, "past the end");
    CHECK(imgpipe_stage_at(-1, &s, &e) == IMGPIPE_EINVAL, "before the start");
    /* the registry is loaded: the path can no longer change */
    CHECK(imgpipe_set_plugin_path("/nowhere", &e) == IMGPIPE_EINVAL && strstr(e.message, "already"), "%s", e.message);
}

static imgpipe_pipeline *open_text(const char *text)
{
    imgpipe_pipeline *p = NULL;
    imgpipe_error e;
    int rc = imgpipe_pipeline_from_text(&p, text, &e);
    CHECK(rc == IMGPIPE_OK, "'%s': %s", text, e.message);
    return p;
}

static void expect_bad_image(imgpipe_pipeline *p, imgpipe_image in, imgpipe_image *out, const char *words)
{
    imgpipe_error e;
    int rc = imgpipe_run(p, &in, out, NULL, NULL, &e);
    CHECK(rc == IMGPIPE_EINVAL && strstr(e.message, words), "rc %d, '%s' lacks '%s'", rc, e.message, words);
}

static void test_bad_images(void)
{
    imgpipe_pipeline *p = open_text("median");
    imgpipe_image good = api_random_image(7, 5, 3, IMGPIPE_U8, 0, 9), out = { 0 }, in;
    in = good; in.width = 0; expect_bad_image(p, in, &out, "in->width");
    in = good; in.height = -3; expect_bad_image(p, in, &out, "in->height");
    in = good; in.channels = 5; expect_bad_image(p, in, &out, "in->channels");
    in = good; in.sample = (imgpipe_sample)9; expect_bad_image(p, in, &out, "in->sample");
    in = good; in.stride = 20; expect_bad_image(p, in, &out, "in->stride (20 bytes) is smaller");
    in = good; in.stride = (size_t)-64; expect_bad_image(p, in, &out, "in->stride is negative");
    imgpipe_image wide = api_random_image(7, 5, 3, IMGPIPE_U16, 0, 9);
    in = wide; in.stride = 7 * 3 * 2 + 1; expect_bad_image(p, in, &out, "in->stride (43 bytes) is not a multiple of the 2-byte sample");
    in = wide; in.data = (char *)wide.data + 1; expect_bad_image(p, in, &out, "in->data is not aligned to its 2-byte samples");
    free(wide.data);
    in = good; in.data = NULL; expect_bad_image(p, in, &out, "in->data is NULL");
    in = good; in.memory = (imgpipe_memory)7; expect_bad_image(p, in, &out, "in->memory");
    imgpipe_image small = { 0 };
    small.width = 6; small.height = 5; small.channels = 3; small.sample = IMGPIPE_U8;
    small.data = malloc(200);
    expect_bad_image(p, good, &small, "out is 6x5");
    imgpipe_image narrow = small;
    narrow.width = 7; narrow.stride = 11;
    expect_bad_image(p, good, &narrow, "out->stride");
    free(small.data);
    imgpipe_error e;
    CHECK(imgpipe_run(p, &good, NULL, NULL, NULL, &e) == IMGPIPE_EINVAL && strstr(e.message, "out is NULL"), "%s", e.message);
    imgpipe_run_options o;
    imgpipe_run_options_init(&o);
    o.struct_size = 0;
    CHECK(imgpipe_run(p, &good, &out, &o, NULL, &e) == IMGPIPE_EINVAL && strstr(e.message, "struct_size"), "%s", e.message);
    imgpipe_run_options_init(&o);
    o.png_level = 10;
    CHECK(imgpipe_run(p, &good, &out, &o, NULL, &e) == IMGPIPE_EINVAL && strstr(e.message, "png_level"), "%s", e.message);
    imgpipe_run_options_init(&o);
    o.tiff_compression = "jpeg";
    CHECK(imgpipe_run(p, &good, &out, &o, NULL, &e) == IMGPIPE_EINVAL && strstr(e.message, "tiff_compression"), "%s", e.message);
    if (!imgpipe_gpu_available()) {
        imgpipe_image dev = good;
        dev.memory = IMGPIPE_CUDA_DEVICE;
        int rc = imgpipe_run(p, &dev, &out, NULL, NULL, &e);
#ifndef IMGPIPE_HAVE_CUDA
        CHECK(rc == IMGPIPE_EUNSUPPORTED && strstr(e.message, "without CUDA"), "%d %s", rc, e.message);
        imgpipe_run_options_init(&o);
        o.device = IMGPIPE_DEVICE_GPU;
        rc = imgpipe_run(p, &good, &out, &o, NULL, &e);
        CHECK(rc == IMGPIPE_EUNSUPPORTED && strstr(e.message, "without CUDA"), "%d %s", rc, e.message);
#else
        CHECK(rc != IMGPIPE_OK, "a device image ran without a GPU");
#endif
    }
    /* an image the pipeline cannot take: entropy needs one channel */
    imgpipe_pipeline *ent = open_text("entropy");
    CHECK(imgpipe_run(ent, &good, &out, NULL, NULL, &e) == IMGPIPE_EINVAL && strstr(e.message, "entropy"), "%s", e.message);
    CHECK(out.data == NULL, "a failed run left an allocation");
    imgpipe_pipeline_close(ent);
    free(good.data);
    imgpipe_pipeline_close(p);
}

/* text on in, into library memory and into caller memory with a stride, against want. */
static void run_both_ways(imgpipe_pipeline *p, const imgpipe_image *in, const imgpipe_image *want, const char *what)
{
    imgpipe_error e;
    imgpipe_image out = { 0 };
    int rc = imgpipe_run(p, in, &out, NULL, NULL, &e);
    CHECK(rc == IMGPIPE_OK, "%s: %s", what, e.message);
    if (rc == IMGPIPE_OK) {
        CHECK(out.stride == (size_t)out.width * (size_t)out.channels * api_sample_size(out.sample), "%s: stride %zu", what,
              out.stride);
        CHECK(api_same(&out, want, what), "%s: library memory", what);
    }
    imgpipe_image_free(&out);
    CHECK(out.data == NULL, "image_free leaves data");
    rc = imgpipe_run(p, in, &out, NULL, NULL, &e);
    CHECK(rc == IMGPIPE_OK && api_same(&out, want, what), "%s: library memory, again", what);
    CHECK(imgpipe_image_free_async(&out, NULL, &e) == IMGPIPE_OK && out.data == NULL, "%s: free_async of host memory: %s",
          what, e.message);
    imgpipe_image shape = { 0 };
    CHECK(imgpipe_output_shape(p, in, &shape, &e) == IMGPIPE_OK, "%s: %s", what, e.message);
    CHECK(shape.width == want->width && shape.height == want->height && shape.channels == want->channels &&
          shape.sample == want->sample, "%s: output_shape", what);
    size_t row = (size_t)shape.width * (size_t)shape.channels * api_sample_size(shape.sample);
    imgpipe_image mine = api_random_image(shape.width, shape.height, shape.channels, shape.sample,
                                          row + 5 * api_sample_size(shape.sample), 77);
    rc = imgpipe_run(p, in, &mine, NULL, NULL, &e);
    CHECK(rc == IMGPIPE_OK, "%s: %s", what, e.message);
    if (rc == IMGPIPE_OK) CHECK(api_same(&mine, want, what), "%s: caller memory", what);
    for (int y = 0; y < mine.height; y++)   /* the padding between rows is the caller's */
        for (size_t b = row; b < mine.stride; b++)
            if (((unsigned char *)mine.data)[(size_t)y * mine.stride + b] != 0xAB) {
                CHECK(0, "%s: row %d's padding written", what, y);
                y = mine.height;
                break;
            }
    free(mine.data);
}

static void test_host_images(void)
{
    imgpipe_pipeline *med = open_text("median radius=1"), *gm = open_text("grayscale | median"),
                     *tr = open_text("transpose");
    static const struct { int w, h, c; imgpipe_sample s; size_t pad; } cases[] = {
        { 37, 23, 3, IMGPIPE_U8, 13 }, { 1, 1, 1, IMGPIPE_U8, 0 }, { 1, 29, 2, IMGPIPE_U8, 3 }, { 31, 1, 4, IMGPIPE_U8, 0 },
        { 29, 17, 1, IMGPIPE_U16, 6 }, { 19, 13, 3, IMGPIPE_U16, 0 }, { 23, 11, 1, IMGPIPE_F32, 4 },
        { 17, 7, 4, IMGPIPE_F32, 12 }, { 1, 1, 3, IMGPIPE_F32, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t row = (size_t)cases[i].w * (size_t)cases[i].c * api_sample_size(cases[i].s);
        imgpipe_image in = api_random_image(cases[i].w, cases[i].h, cases[i].c, cases[i].s, cases[i].pad ? row + cases[i].pad : 0,
                                            (uint32_t)i + 3);
        char what[96];
        snprintf(what, sizeof what, "median %dx%dx%d sample %d stride %zu", in.width, in.height, in.channels, (int)in.sample,
                 in.stride);
        imgpipe_image want = api_ref_median3(&in);
        run_both_ways(med, &in, &want, what);
        free(want.data);
        /* transpose: out(x, y) = in(y, x) */
        want = api_random_image(in.height, in.width, in.channels, in.sample, 0, 1);
        for (int y = 0; y < in.height; y++)
            for (int x = 0; x < in.width; x++)
                memcpy((char *)want.data + (size_t)x * want.stride + (size_t)y * (size_t)in.channels * api_sample_size(in.sample),
                       (char *)in.data + (size_t)y * in.stride + (size_t)x * (size_t)in.channels * api_sample_size(in.sample),
                       (size_t)in.channels * api_sample_size(in.sample));
        snprintf(what, sizeof what, "transpose %dx%dx%d sample %d", in.width, in.height, in.channels, (int)in.sample);
        run_both_ways(tr, &in, &want, what);
        free(want.data);
        if (in.channels == 3 && in.sample == IMGPIPE_U8) {
            imgpipe_image gray = api_ref_gray_u8(&in);
            want = api_ref_median3(&gray);
            snprintf(what, sizeof what, "grayscale | median %dx%d", in.width, in.height);
            run_both_ways(gm, &in, &want, what);
            free(gray.data);
            free(want.data);
        }
        free(in.data);
    }
    imgpipe_pipeline_close(med);
    imgpipe_pipeline_close(gm);
    imgpipe_pipeline_close(tr);
}

static int write_png(const char *path, const imgpipe_image *im)
{
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    pi.width = (png_uint_32)im->width;
    pi.height = (png_uint_32)im->height;
    pi.format = im->channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    return png_image_write_to_file(&pi, path, 0, im->data, (png_int_32)im->stride, NULL) ? 0 : -1;
}

static int read_png(const char *path, imgpipe_image *im)
{
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&pi, path)) return -1;
    int c = PNG_IMAGE_SAMPLE_CHANNELS(pi.format) >= 3 ? 3 : 1;
    pi.format = c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    *im = api_random_image((int)pi.width, (int)pi.height, c, IMGPIPE_U8, 0, 1);
    return png_image_finish_read(&pi, NULL, im->data, (png_int_32)im->stride, NULL) ? 0 : -1;
}

/* The same pipeline on the same image: imgpipe run (the program), imgpipe_run_file and imgpipe_run. */
static void test_same_as_cli(void)
{
    const char *bin = getenv("IMGPIPE_BIN");
    if (!bin) {
        fprintf(stderr, "IMGPIPE_BIN is not set: the comparison with the command line is skipped\n");
        return;
    }
    static const char *const texts[] = { "grayscale | median radius=1 | convolve kernel=sharpen",
                                         "mean radius=2 | convolve kernel=\"1 2 1; 2 4 2; 1 2 1\"", "median radius=2 border=reflect101" };
    imgpipe_image in = api_random_image(41, 17, 3, IMGPIPE_U8, 0, 5);
    char src[512], cli_out[512], api_out[512], cmd[2048];
    snprintf(src, sizeof src, "%s/in.png", tmp);
    CHECK(write_png(src, &in) == 0, "cannot write %s", src);
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        snprintf(cli_out, sizeof cli_out, "%s/cli%zu.png", tmp, i);
        snprintf(api_out, sizeof api_out, "%s/api%zu.png", tmp, i);
        snprintf(cmd, sizeof cmd, "'%s' run --device cpu -q -e '%s' '%s' '%s'", bin, texts[i], src, cli_out);
        CHECK(system(cmd) == 0, "%s failed", cmd);
        imgpipe_pipeline *p = open_text(texts[i]);
        imgpipe_error e;
        CHECK(imgpipe_run_file(p, src, api_out, NULL, &e) == IMGPIPE_OK, "%s", e.message);
        imgpipe_image from_cli, from_file, mem = { 0 };
        CHECK(imgpipe_run(p, &in, &mem, NULL, NULL, &e) == IMGPIPE_OK, "%s", e.message);
        if (read_png(cli_out, &from_cli) == 0 && read_png(api_out, &from_file) == 0) {
            CHECK(api_same(&from_file, &from_cli, texts[i]), "imgpipe_run_file against the CLI");
            CHECK(api_same(&mem, &from_cli, texts[i]), "imgpipe_run against the CLI");
            free(from_cli.data);
            free(from_file.data);
        } else {
            CHECK(0, "cannot read %s or %s", cli_out, api_out);
        }
        imgpipe_image_free(&mem);
        imgpipe_pipeline_close(p);
    }
    imgpipe_pipeline *p = open_text("median");
    imgpipe_error e;
    snprintf(api_out, sizeof api_out, "%s/none.png", tmp);
    snprintf(src, sizeof src, "%s/absent.png", tmp);
    CHECK(imgpipe_run_file(p, src, api_out, NULL, &e) == IMGPIPE_EIO && strcmp(e.path, src) == 0, "%d %s (path '%s')",
          e.code, e.message, e.path);
    CHECK(access(api_out, F_OK) != 0, "a failed run left %s", api_out);
    snprintf(src, sizeof src, "%s/in.png", tmp);
    snprintf(api_out, sizeof api_out, "%s/out.bmp", tmp);
    CHECK(imgpipe_run_file(p, src, api_out, NULL, &e) == IMGPIPE_EINVAL && strstr(e.message, "extension"), "%s", e.message);
    imgpipe_pipeline_close(p);
    free(in.data);
}

typedef struct {
    imgpipe_pipeline *p;
    int index, failures;
} thread_job;

static void *thread_main(void *arg)
{
    thread_job *j = arg;
    for (int k = 0; k < 40; k++) {
        int w = 5 + (j->index * 7 + k * 3) % 29, h = 3 + (j->index + k) % 11;
        imgpipe_image in = api_random_image(w, h, 1 + (k % 4), IMGPIPE_U8, (size_t)(w * 4 + k % 3), (uint32_t)(j->index * 1000 + k));
        imgpipe_image want = api_ref_median3(&in), out = { 0 };
        imgpipe_error e;
        if (imgpipe_run(j->p, &in, &out, NULL, NULL, &e) != IMGPIPE_OK || !api_same(&out, &want, "thread")) j->failures++;
        imgpipe_image_free(&out);
        free(in.data);
        free(want.data);
    }
    return NULL;
}

static void test_threads(void)
{
    imgpipe_pipeline *p = open_text("median radius=1");
    thread_job jobs[8];
    pthread_t tids[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (thread_job){ p, i, 0 };
        CHECK(pthread_create(&tids[i], NULL, thread_main, &jobs[i]) == 0, "thread %d", i);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(tids[i], NULL);
        CHECK(jobs[i].failures == 0, "thread %d: %d of 40 runs wrong", i, jobs[i].failures);
    }
    imgpipe_pipeline_close(p);
}

typedef struct {
    int calls, last_done, failed_seen, stop_after, bad_order;
    char last_path[512];
} progress_log;

static int on_progress(void *user, const imgpipe_progress *pr)
{
    progress_log *l = user;
    l->calls++;
    if (pr->done + pr->failed != l->calls || pr->total < l->calls) l->bad_order++;
    if (pr->path) snprintf(l->last_path, sizeof l->last_path, "%s", pr->path);
    else l->bad_order++;
    l->failed_seen += pr->message != NULL;
    return l->stop_after && l->calls >= l->stop_after;
}

static int count_files(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | wc -l", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f && fscanf(f, "%d", &n) != 1) n = -1;
    if (f) pclose(f);
    return n;
}

static void test_folders(void)
{
    char in_dir[512], out_dir[512], path[600];
    snprintf(in_dir, sizeof in_dir, "%s/photos", tmp);
    mkdir(in_dir, 0755);
    imgpipe_image ims[6];
    for (int i = 0; i < 6; i++) {
        ims[i] = api_random_image(13 + i, 9 + 2 * i, 3, IMGPIPE_U8, 0, (uint32_t)(50 + i));
        snprintf(path, sizeof path, "%s/im%d.png", in_dir, i);
        CHECK(write_png(path, &ims[i]) == 0, "%s", path);
    }
    imgpipe_pipeline *p = open_text("grayscale | median");
    imgpipe_run_options o;
    imgpipe_run_options_init(&o);
    o.device = IMGPIPE_DEVICE_CPU;
    o.jobs = 2;
    progress_log log = { 0 };
    imgpipe_error e;
    snprintf(out_dir, sizeof out_dir, "%s/cleaned", tmp);
    CHECK(imgpipe_run_folder(p, in_dir, out_dir, &o, on_progress, &log, &e) == IMGPIPE_OK, "%s", e.message);
    CHECK(log.calls == 6 && log.bad_order == 0 && log.failed_seen == 0, "%d calls, %d out of order", log.calls, log.bad_order);
    CHECK(strstr(log.last_path, "/photos/im") != NULL, "progress path '%s'", log.last_path);
    for (int i = 0; i < 6; i++) {
        imgpipe_image got, gray = api_ref_gray_u8(&ims[i]), want = api_ref_median3(&gray);
        snprintf(path, sizeof path, "%s/im%d.png", out_dir, i);
        if (read_png(path, &got) == 0) {
            CHECK(api_same(&got, &want, path), "folder output");
            free(got.data);
        } else {
            CHECK(0, "no output %s", path);
        }
        free(gray.data);
        free(want.data);
    }
    /* cancelled after the first image, one image in flight at a time */
    o.jobs = 1;
    log = (progress_log){ .stop_after = 1 };
    snprintf(out_dir, sizeof out_dir, "%s/stopped", tmp);
    CHECK(imgpipe_run_folder(p, in_dir, out_dir, &o, on_progress, &log, &e) == IMGPIPE_ECANCELED, "%d %s", e.code, e.message);
    CHECK(log.calls == 1 && count_files(out_dir) == 1, "%d calls, %d files after cancelling", log.calls, count_files(out_dir));
    /* one damaged file: the rest run, and the run says which failed */
    snprintf(path, sizeof path, "%s/im9.png", in_dir);
    FILE *f = fopen(path, "wb");
    fputs("\x89PNG\r\n\x1a\n this is not the rest of a PNG", f);
    fclose(f);
    log = (progress_log){ 0 };
    snprintf(out_dir, sizeof out_dir, "%s/partly", tmp);
    CHECK(imgpipe_run_folder(p, in_dir, out_dir, &o, on_progress, &log, &e) == IMGPIPE_EFAILED, "%d %s", e.code, e.message);
    CHECK(strstr(e.path, "im9.png") && strstr(e.message, "1 of 7 images failed"), "'%s' / '%s'", e.path, e.message);
    CHECK(log.calls == 7 && log.failed_seen == 1 && count_files(out_dir) == 6, "%d calls, %d failures told, %d files",
          log.calls, log.failed_seen, count_files(out_dir));
    snprintf(path, sizeof path, "%s/im0.png", in_dir);
    CHECK(imgpipe_run_folder(p, path, out_dir, &o, NULL, NULL, &e) == IMGPIPE_EINVAL && strstr(e.message, "not a folder"),
          "%s", e.message);
    snprintf(path, sizeof path, "%s/absent", tmp);
    CHECK(imgpipe_run_folder(p, path, out_dir, &o, NULL, NULL, &e) != IMGPIPE_OK, "a missing folder ran");
    for (int i = 0; i < 6; i++) free(ims[i].data);
    imgpipe_pipeline_close(p);
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/imgpipe_api_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    test_version();
    test_pipeline_errors();
    test_stages();
    test_bad_images();
    test_host_images();
    test_same_as_cli();
    test_threads();
    test_folders();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmp);
    if (api_failures) fprintf(stderr, "%d check(s) failed\n", api_failures);
    else printf("test_api: all checks passed\n");
    return api_failures ? 1 : 0;
}
