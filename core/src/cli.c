#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <signal.h>
#include "batch.h"
#include "batch_mpi.h"
#include "cost.h"
#include "folder_device.h"
#include "exec.h"
#include "gpu.h"
#include "image.h"
#include "io.h"
#include "fuse.h"
#include "jpeg_layout.h"
#include "jpeg_route.h"
#include "meta.h"
#include "newplugin.h"
#include "pipeline.h"
#include "plan.h"
#include "registry.h"
#include "run_stream.h"
#include "stream_budget.h"
#include "stage_class.h"
#include "startup.h"
#include "mono_clock.h"

#ifndef IMGPIPE_VERSION
#define IMGPIPE_VERSION "0.0.0"
#endif

typedef enum { DEV_AUTO, DEV_CPU, DEV_GPU } device_choice;

typedef struct {
    const char *command;
    const char *positional[4];
    int n_positional;
    const char *expr;            /* -e TEXT */
    const char *plugin_path;
    device_choice device;
    int threads;
    int profile;
    int no_fuse;                 /* --no-fuse: every stage runs its own GPU kernel */
    int quiet;
    exec_transfer transfer;
    io_options io;
    ip_shape check_shape;
    int recursive, resume, jobs;
    const char *format;          /* --format png|tif|jpg for folders */
    const char *gpus;            /* --gpus all|0,2 */
    int jpeg_gpu_required;       /* --jpeg-decoder gpu: nvJPEG on the GPU (auto and cpu: libjpeg-turbo) */
    int shard_index, shard_count;   /* --shard I/N */
    int page_given, all_pages;      /* --page N, --all-pages */
    int strip;                   /* --strip: no metadata carried to the output */
    int stream;                  /* --stream: STREAM_AUTO, STREAM_ON, STREAM_OFF */
    uint64_t memory, gpu_memory; /* --memory, --gpu-memory (0: the defaults) */
} cli_options;

enum { STREAM_AUTO = 0, STREAM_ON, STREAM_OFF };

static const char usage_text[] =
    "usage: imgpipe run [options] PIPELINE IN OUT\n"
    "       imgpipe run [options] -e \"STAGE [key=value ...] | STAGE ...\" IN OUT\n"
    "       imgpipe run [options] PIPELINE|-e TEXT IN_FOLDER|@LIST OUT_FOLDER\n"
    "       imgpipe check [options] PIPELINE | -e TEXT\n"
    "       imgpipe plugins [STAGE]\n"
    "       imgpipe new-plugin NAME [DIR]\n"
    "       imgpipe --help | --version\n"
    "\n"
    "Runs an image-processing pipeline: each line of PIPELINE (or each '|'-separated part of\n"
    "-e TEXT) is a stage loaded from a plugin. IN may be PNG, JPEG or TIFF (recognised by its\n"
    "content); OUT's format comes from its extension (.png, .jpg/.jpeg, .tif/.tiff).\n"
    "\n"
    "commands:\n"
    "  run              process IN into OUT\n"
    "  check            validate a pipeline without images (stage names, arguments, shapes)\n"
    "  plugins [STAGE]  list the stages found, or one stage's parameters\n"
    "  new-plugin NAME [DIR]  write a new stage's source, ready to build (DIR defaults to NAME)\n"
    "\n"
    "options:\n"
    "  -e TEXT                 the pipeline as text instead of a file\n"
    "  --device auto|cpu|gpu   where to run (default auto: for one image, the device estimated to\n"
    "                          finish first, start-up and copies included; for folders, the\n"
    "                          same estimate over the folder, planned on its first image)\n"
    "  --threads N             CPU threads for CPU stages and codecs (default: all cores)\n"
    "  --transfer copy|zerocopy  GPU: copy the image to the card (default), or let the\n"
    "                          first and last stages read and write mapped host memory\n"
    "  --profile               print the time of GPU start-up, decode, upload, each stage,\n"
    "                          download, encode, and what fusion compiled or loaded (streamed:\n"
    "                          each step's total and the overlap)\n"
    "  --no-fuse               GPU: run every stage with its own kernel. By default, when NVRTC\n"
    "                          is found, two or more point stages in a row (grayscale, plugins\n"
    "                          that offer CUDA source) become one kernel compiled at run time, and\n"
    "                          point stages before an 8-bit one-channel median radius=1, mean\n"
    "                          radius<=16, whole-weight convolve (not a 3x3 or 5x5 of small\n"
    "                          weights, such as the named ones: faster apart), entropy (radius<=3,\n"
    "                          bins<=16, levels>=256) or histogram are computed in its kernel;\n"
    "                          same output bit for bit, compiled kernels in\n"
    "                          $XDG_CACHE_HOME/imgpipe (or ~/.cache/imgpipe)\n"
    "  --plugin-path DIRS      look for plugins here first (colon-separated)\n"
    "  --max-pixels N          refuse images with more pixels (default 1073741824)\n"
    "  --max-ratio N           refuse images that decode to more than N times their file's size\n"
    "                          (default 100000)\n"
    "  --max-jpeg-scans N      refuse JPEG files with more scans (default 1000)\n"
    "  --max-tiff-blocks N     refuse TIFF images stored in more strips or tiles (default 4194304)\n"
    "  --max-tiff-tile-bytes N refuse TIFF tiles that decode to more bytes, unless no larger than\n"
    "                          the whole image (default 67108864)\n"
    "  --png-level 0..9        PNG compression level (default 6)\n"
    "  --quality 1..100        JPEG quality (default 90)\n"
    "  --jpeg-decoder auto|cpu|gpu  gpu: on the GPU, JPEG is decoded and encoded by nvJPEG (decoded\n"
    "                          pixels then differ from libjpeg-turbo's by up to 3 levels); auto (the\n"
    "                          default) and cpu: libjpeg-turbo, which is faster on the whole run today\n"
    "                          (nvJPEG's start-up costs more than it saves; see README)\n"
    "  --tiff-compression deflate|lzw|zstd|none  TIFF output compression (default deflate,\n"
    "                          with the predictor)\n"
    "  --fail-on error|warning  error (the default): an image decoded past damage (a JPEG ending\n"
    "                          early, a bad CRC on a PNG ancillary chunk, a PNG damaged after its\n"
    "                          whole image data, a libtiff warning) is processed, with a warning;\n"
    "                          warning: it is refused like a broken one\n"
    "  --page N                the page of a multi-page TIFF to read, counted from 0 (default 0)\n"
    "  --strip                 write no metadata: by default the ICC profile (when the output keeps\n"
    "                          the input's colour model), EXIF, XMP, PNG text and the resolution\n"
    "                          are carried to every output format that holds them\n"
    "  --no-autorotate         keep the pixels as stored: by default an image with an EXIF\n"
    "                          orientation is turned upright, and its output tagged upright\n"
    "  --shape WxHxC[:DEPTH]   check: the input shape to plan for (default 640x480x3:u8)\n"
    "  --memory SIZE           host memory a run may use, e.g. 512M or 4G (default: half the\n"
    "                          machine's memory); it sets the band height of a streamed run\n"
    "  --gpu-memory SIZE       GPU memory a run may use; a whole-image run needing more is\n"
    "                          streamed instead, and it sets the band height of a streamed run on\n"
    "                          the GPU (default: half the GPU's free memory for streamed runs)\n"
    "  --stream auto|on|off    run one image in bands of rows, read, processed and written a band\n"
    "                          at a time in bounded memory (TIFF, PNG and JPEG in and out; interlaced\n"
    "                          PNG and some TIFF kinds are read whole). auto (default): streamed\n"
    "                          when the whole image would not fit --memory (or --gpu-memory); on:\n"
    "                          always where the input allows. Bands run on the GPU under --device\n"
    "                          gpu (and auto when it picks the GPU), on GPU 0, or dealt to one\n"
    "                          worker per GPU that --gpus lists\n"
    "  --bigtiff-above SIZE    streamed TIFF output: BigTIFF above this many pixel bytes (default\n"
    "                          3.5G, so a file past 4 GB is always BigTIFF)\n"
    "\n"
    "folders (IN is a folder, or @LIST: a file naming one image a line):\n"
    "  -r, --recursive         descend into subfolders, recreating them under OUT_FOLDER\n"
    "  --format png|tif|jpg    output format (default: each input's own)\n"
    "  --jobs N                images in flight at once (default: the number of cores)\n"
    "  --resume                skip inputs whose output already exists\n"
    "  --all-pages             every page of a multi-page TIFF, each to its own output named\n"
    "                          STEM-p0.EXT, STEM-p1.EXT, ... (files of one page keep STEM.EXT)\n"
    "  --gpus all|I,J,...      GPUs to use, one worker stream each in turn (default: all for a\n"
    "                          folder, GPU 0 for one image); a streamed image's bands are dealt\n"
    "                          to those listed, a GPU listed twice (0,0) taking two workers\n"
    "  --shard I/N             take only the images whose path (below IN_FOLDER) hashes to I of N\n"
    "                          (0 <= I < N): N copies, e.g. a Slurm job array, cover the folder once\n"
    "  mpirun -n N imgpipe run ... IN_FOLDER OUT_FOLDER: rank 0 hands the images out to the ranks\n"
    "                          as they ask; --jobs is per rank, each rank takes its local rank's GPU\n"
    "  Files that are not PNG, JPEG or TIFF are skipped and counted; one bad image is reported\n"
    "  and the rest go on; Ctrl-C stops after the images in flight, leaving no partial file.\n"
    "  -q, --quiet             print errors only\n"
    "  -h, --help              this text\n"
    "  --version               the version\n"
    "\n"
    "Plugins are looked for in --plugin-path, then $IMGPIPE_PLUGIN_PATH (colon-separated), then\n"
    "the plugin folder installed beside the executable (../lib/imgpipe/plugins).\n"
    "\n"
    "exit codes: 0 done; 1 an image could not be read, processed or written;\n"
    "            2 a usage or pipeline error (nothing was processed)\n";

static void say(const cli_options *o, const char *fmt, ...)
{
    if (o->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("imgpipe: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("imgpipe: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("imgpipe: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n(see 'imgpipe --help')\n", stderr);
    va_end(ap);
    return CLI_USAGE;
}

static int parse_long(const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse_shape(const char *text, ip_shape *s)
{
    int w, h, c, used = 0;
    char depth[8] = "u8";
    if (sscanf(text, "%dx%dx%d%n", &w, &h, &c, &used) != 3) return 0;
    if (text[used] == ':' && sscanf(text + used + 1, "%7s", depth) != 1) return 0;
    if (text[used] && text[used] != ':') return 0;
    ip_dtype t = strcmp(depth, "u8") == 0 ? IP_U8 : strcmp(depth, "u16") == 0 ? IP_U16
               : strcmp(depth, "f32") == 0 ? IP_F32 : 0;
    if (!t || w < 1 || h < 1 || c < 1 || c > 4) return 0;
    *s = (ip_shape){ w, h, c, t };
    return 1;
}

/* "--name=value" or "--name value"; returns the value or NULL (with *i advanced). */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=') return argv[*i] + n + 1;
    if (strcmp(argv[*i], name) == 0 && *i + 1 < argc) return argv[++*i];
    return NULL;
}

static int is_option(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int parse_numeric_option(const char *name, const char *v, long lo, long hi, long *out)
{
    if (!v) return usage_error("%s needs a value", name);
    if (!parse_long(v, lo, hi, out)) return usage_error("%s expects a whole number from %ld to %ld, not '%s'", name, lo, hi, v);
    return CLI_OK;
}

static int parse_option(int argc, char **argv, int *i, cli_options *o)
{
    const char *a = argv[*i], *v;
    long n;
    int rc = CLI_OK;
    if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) o->quiet = 1;
    else if (strcmp(a, "-r") == 0 || strcmp(a, "--recursive") == 0) o->recursive = 1;
    else if (strcmp(a, "--resume") == 0) o->resume = 1;
    else if (strcmp(a, "--all-pages") == 0) o->all_pages = 1;
    else if (strcmp(a, "--strip") == 0) o->strip = 1;
    else if (strcmp(a, "--no-autorotate") == 0) o->io.autorotate = 0;
    else if (is_option(a, "--format")) {
        v = option_value(argc, argv, i, "--format");
        if (!v || (strcmp(v, "png") && strcmp(v, "tif") && strcmp(v, "jpg")))
            return usage_error("--format must be png, tif or jpg");
        o->format = v;
    } else if (is_option(a, "--gpus")) {
        if (!(o->gpus = option_value(argc, argv, i, "--gpus"))) return usage_error("--gpus needs all or a list such as 0,2");
    } else if (is_option(a, "--jobs")) {
        if (!(rc = parse_numeric_option("--jobs", option_value(argc, argv, i, "--jobs"), 1, 1024, &n)))
            o->jobs = (int)n;
    }
    else if (strcmp(a, "--profile") == 0) o->profile = 1;
    else if (strcmp(a, "--no-fuse") == 0) o->no_fuse = 1;
    else if (strcmp(a, "-e") == 0) {
        if (*i + 1 >= argc) return usage_error("-e needs the pipeline text");
        o->expr = argv[++*i];
    } else if (is_option(a, "--device")) {
        v = option_value(argc, argv, i, "--device");
        if (!v) return usage_error("--device needs auto, cpu or gpu");
        if (strcmp(v, "auto") == 0) o->device = DEV_AUTO;
        else if (strcmp(v, "cpu") == 0) o->device = DEV_CPU;
        else if (strcmp(v, "gpu") == 0) o->device = DEV_GPU;
        else return usage_error("--device must be auto, cpu or gpu, not '%s'", v);
    } else if (is_option(a, "--transfer")) {
        v = option_value(argc, argv, i, "--transfer");
        if (v && strcmp(v, "copy") == 0) o->transfer = EXEC_COPY;
        else if (v && strcmp(v, "zerocopy") == 0) o->transfer = EXEC_ZEROCOPY;
        else return usage_error("--transfer must be copy or zerocopy");
    } else if (is_option(a, "--plugin-path")) {
        if (!(o->plugin_path = option_value(argc, argv, i, "--plugin-path")))
            return usage_error("--plugin-path needs a folder");
    } else if (is_option(a, "--threads")) {
        if (!(rc = parse_numeric_option("--threads", option_value(argc, argv, i, "--threads"), 1, 1024, &n)))
            o->threads = (int)n;
    } else if (is_option(a, "--png-level")) {
        if (!(rc = parse_numeric_option("--png-level", option_value(argc, argv, i, "--png-level"), 0, 9, &n)))
            o->io.png_level = (int)n;
    } else if (is_option(a, "--quality")) {
        if (!(rc = parse_numeric_option("--quality", option_value(argc, argv, i, "--quality"), 1, 100, &n)))
            o->io.jpeg_quality = (int)n;
    } else if (is_option(a, "--shard")) {
        v = option_value(argc, argv, i, "--shard");
        int used = 0;
        if (!v || sscanf(v, "%d/%d%n", &o->shard_index, &o->shard_count, &used) != 2 || v[used] ||
            o->shard_count < 1 || o->shard_count > 1000000 || o->shard_index < 0 || o->shard_index >= o->shard_count)
            return usage_error("--shard expects I/N with 0 <= I < N, e.g. --shard 3/16");
    } else if (is_option(a, "--jpeg-decoder")) {
        v = option_value(argc, argv, i, "--jpeg-decoder");
        if (v && strcmp(v, "gpu") == 0) o->jpeg_gpu_required = 1;
        else if (v && strcmp(v, "cpu") == 0) o->jpeg_gpu_required = 0;
        else if (!v || strcmp(v, "auto") != 0) return usage_error("--jpeg-decoder must be auto, cpu or gpu");
    } else if (is_option(a, "--tiff-compression")) {
        v = option_value(argc, argv, i, "--tiff-compression");
        if (v && strcmp(v, "deflate") == 0) o->io.tiff_compression = IO_TIFF_DEFLATE;
        else if (v && strcmp(v, "lzw") == 0) o->io.tiff_compression = IO_TIFF_LZW;
        else if (v && strcmp(v, "zstd") == 0) o->io.tiff_compression = IO_TIFF_ZSTD;
        else if (v && strcmp(v, "none") == 0) o->io.tiff_compression = IO_TIFF_NONE;
        else return usage_error("--tiff-compression must be deflate, lzw, zstd or none");
    } else if (is_option(a, "--fail-on")) {
        v = option_value(argc, argv, i, "--fail-on");
        if (v && strcmp(v, "error") == 0) o->io.fail_on = IO_FAIL_ON_ERROR;
        else if (v && strcmp(v, "warning") == 0) o->io.fail_on = IO_FAIL_ON_WARNING;
        else return usage_error("--fail-on must be error or warning");
    } else if (is_option(a, "--page")) {
        if (!(rc = parse_numeric_option("--page", option_value(argc, argv, i, "--page"), 0, 65534, &n))) {
            o->io.page = (uint32_t)n;
            o->page_given = 1;
        }
    } else if (is_option(a, "--max-pixels")) {
        if (!(rc = parse_numeric_option("--max-pixels", option_value(argc, argv, i, "--max-pixels"), 1, LONG_MAX, &n)))
            o->io.max_pixels = (uint64_t)n;
    } else if (is_option(a, "--max-ratio")) {
        if (!(rc = parse_numeric_option("--max-ratio", option_value(argc, argv, i, "--max-ratio"), 1, LONG_MAX, &n)))
            o->io.max_ratio = (uint64_t)n;
    } else if (is_option(a, "--max-jpeg-scans")) {
        v = option_value(argc, argv, i, "--max-jpeg-scans");
        if (!(rc = parse_numeric_option("--max-jpeg-scans", v, 1, INT_MAX, &n))) o->io.max_jpeg_scans = (int)n;
    } else if (is_option(a, "--max-tiff-blocks")) {
        v = option_value(argc, argv, i, "--max-tiff-blocks");
        if (!(rc = parse_numeric_option("--max-tiff-blocks", v, 1, LONG_MAX, &n))) o->io.max_tiff_blocks = (uint64_t)n;
    } else if (is_option(a, "--max-tiff-tile-bytes")) {
        v = option_value(argc, argv, i, "--max-tiff-tile-bytes");
        if (!(rc = parse_numeric_option("--max-tiff-tile-bytes", v, 1, LONG_MAX, &n))) o->io.max_tiff_tile_bytes = (uint64_t)n;
    } else if (is_option(a, "--memory") || is_option(a, "--gpu-memory") || is_option(a, "--bigtiff-above")) {
        const char *name = is_option(a, "--memory") ? "--memory" : is_option(a, "--gpu-memory") ? "--gpu-memory"
                                                                                                 : "--bigtiff-above";
        uint64_t bytes;
        v = option_value(argc, argv, i, name);
        if (!v || !stream_parse_size(v, &bytes) || bytes < 1)
            return usage_error("%s expects a size such as 512M or 4G", name);
        if (name[2] == 'm') o->memory = bytes;
        else if (name[2] == 'g') o->gpu_memory = bytes;
        else o->io.tiff_bigtiff_above = bytes;
    } else if (is_option(a, "--stream")) {
        v = option_value(argc, argv, i, "--stream");
        if (v && strcmp(v, "auto") == 0) o->stream = STREAM_AUTO;
        else if (v && strcmp(v, "on") == 0) o->stream = STREAM_ON;
        else if (v && strcmp(v, "off") == 0) o->stream = STREAM_OFF;
        else return usage_error("--stream must be auto, on or off");
    } else if (is_option(a, "--shape")) {
        v = option_value(argc, argv, i, "--shape");
        if (!v || !parse_shape(v, &o->check_shape))
            return usage_error("--shape expects WxHxC with an optional :u8, :u16 or :f32, e.g. 512x512x1:u16");
    } else {
        return usage_error("unknown option '%s'", a);
    }
    return rc;
}

static int parse_args(int argc, char **argv, cli_options *o)
{
    memset(o, 0, sizeof *o);
    io_default_options(&o->io);
    o->io.autorotate = 1;
    o->check_shape = (ip_shape){ 640, 480, 3, IP_U8 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] != '\0' && strcmp(a, "--") != 0) {
            int rc = parse_option(argc, argv, &i, o);
            if (rc) return rc;
        } else if (!o->command) {
            o->command = a;
        } else if (o->n_positional < 4) {
            o->positional[o->n_positional++] = a;
        } else {
            return usage_error("too many arguments");
        }
    }
    o->io.threads = o->threads;
    return CLI_OK;
}

static int load_registry(const cli_options *o, registry *reg)
{
    char default_dir[PATH_MAX], err[256];
    const char *dflt = registry_default_dir(default_dir, sizeof default_dir) == IP_OK ? default_dir : NULL;
    if (registry_load(reg, o->plugin_path, getenv("IMGPIPE_PLUGIN_PATH"), dflt, err, sizeof err) != IP_OK) {
        fail("%s", err);
        return CLI_USAGE;
    }
    for (int i = 0; i < reg->n_problems; i++) fprintf(stderr, "imgpipe: warning: plugin refused: %s\n", reg->problems[i]);
    return CLI_OK;
}

/* Parses the pipeline file or -e text and binds it to plugins. */
static int load_plan(const cli_options *o, const char *file, const registry *reg, plan *p)
{
    pl_pipeline pl;
    char err[1024];
    int rc = o->expr ? pl_parse(o->expr, "-e", &pl, err, sizeof err) : pl_parse_file(file, &pl, err, sizeof err);
    if (rc != IP_OK) {
        fail("%s", err);
        return CLI_USAGE;
    }
    rc = plan_build(reg, &pl, p, err, sizeof err);
    pl_free(&pl);
    if (rc != IP_OK) {
        fail("%s", err);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static int cpu_threads(const cli_options *o)
{
    int threads = o->threads;
#ifdef _OPENMP
    if (!threads) threads = omp_get_max_threads();
#endif
    return threads > 0 ? threads : 1;
}

/* --device gpu in a build without CUDA fails before anything is read. */
static int check_gpu_build(const cli_options *o)
{
    if (o->device != DEV_GPU || gpu_built()) return CLI_OK;
    fail("--device gpu: imgpipe was built without CUDA");
    return CLI_USAGE;
}

static int choose_device(const cli_options *o, exec_device *dev)
{
    char why[256] = "", name[256] = "GPU";
    int n = o->device == DEV_CPU ? 0 : gpu_device_count(why, sizeof why);
    if (o->device == DEV_GPU && n == 0) {
        fail("--device gpu: %s", why);
        return CLI_USAGE;
    }
    if (n > 0) {
        gpu_device_name(0, name, sizeof name);
        say(o, "device: GPU 0 (%s)%s", name, o->transfer == EXEC_ZEROCOPY ? ", zero-copy transfers" : "");
        *dev = EXEC_GPU;
    } else {
        if (o->device == DEV_CPU) say(o, "device: CPU, %d threads", cpu_threads(o));
        else say(o, "device: CPU, %d threads (%s)", cpu_threads(o), why);
        *dev = EXEC_CPU;
    }
    return CLI_OK;
}

/* One image's run: where it goes, and the GPU start-up running beside the decoding. */
typedef struct {
    const cli_options *o;
    plan *p;
    const char *out_path;
    io_format in_format;
    ip_shape final;
    int failed;               /* the pipeline cannot take this image (a usage error) */
    exec_device dev;
    startup *gpu_startup;     /* running while the image decodes */
    int decided;              /* auto has chosen (the shape may be seen twice) */
    int gpu_jpeg;             /* on the GPU, JPEG goes through nvJPEG */
    char why[1024];           /* why auto chose what it chose */
    io_warnings warnings;     /* what the decoder went on past */
    io_meta meta;             /* the input's, for the output (empty under --strip) */
    fuse_warm *warm;          /* fused kernels compiling beside decoding */
} one_run;

static int begin_gpu(one_run *r, char *err, size_t errlen)
{
    exec_options eo = { EXEC_GPU, 0, r->o->threads, r->o->transfer, r->o->profile, 0 };
    r->dev = EXEC_GPU;
    unsigned uses = 0;
    if (r->gpu_jpeg && r->in_format == IO_FMT_JPEG) uses |= JPEG_GPU_DECODE;
    if (r->gpu_jpeg && io_format_from_ext(r->out_path) == IO_FMT_JPEG) uses |= JPEG_GPU_ENCODE;
    return startup_begin(&r->gpu_startup, &eo, uses, err, errlen);
}

/* auto: the GPU's start-up begins only when the estimate says it pays, so a small image never
 * waits for it. */
static int choose_for_image(one_run *r, const ip_shape *shape, char *err, size_t errlen)
{
    if (r->o->device != DEV_AUTO || r->decided) return IP_OK;
    r->decided = 1;
    if (!gpu_built()) {
        snprintf(r->why, sizeof r->why, "imgpipe was built without CUDA");
        return IP_OK;
    }
    cost_estimate est;
    cost_setting set = { r->in_format, io_format_from_ext(r->out_path), cpu_threads(r->o), r->gpu_jpeg };
    cost_estimate_plan(r->p, shape, &set, &est);
    if (est.cpu_ms <= est.gpu_ms) {
        snprintf(r->why, sizeof r->why, "auto: the CPU is estimated faster for this image, %.0f ms against %.0f ms "
                 "on the GPU with %.0f ms of its start-up", est.cpu_ms, est.gpu_ms, est.startup_ms);
        return IP_OK;
    }
    snprintf(r->why, sizeof r->why, "auto: estimated %.0f ms against %.0f ms on the CPU", est.gpu_ms, est.cpu_ms);
    return begin_gpu(r, err, errlen);
}

/* Plans the pipeline as soon as the decoder knows the shape, before any pixel is decoded. */
static int plan_on_shape(void *user, const ip_shape *shape, char *err, size_t errlen)
{
    one_run *r = user;
    int rc = plan_shapes(r->p, shape, &r->final, err, errlen);
    if (rc == IP_OK && (rc = io_check_writable(io_format_from_ext(r->out_path), &r->final, err, errlen)) != IP_OK) {
        char why[768];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "%s: %s", r->out_path, why);
    }
    r->failed = rc != IP_OK;
    if (rc == IP_OK) rc = choose_for_image(r, shape, err, errlen);
    if (rc == IP_OK && r->dev == EXEC_GPU && !r->o->no_fuse && !r->warm) r->warm = fuse_warm_begin(r->p, 0);
    return rc;
}

/* Collects the started GPU context; under auto, a GPU that is not there sends the image to the
 * CPU, under --device gpu it is a usage error. */
static int finish_start(one_run *r, exec_ctx **ctx, jpeg_gpu **jpeg, double *took_ms, double *waited_ms, char *err,
                        size_t errlen)
{
    if (!r->gpu_startup) return IP_OK;
    int rc = startup_finish(r->gpu_startup, ctx, took_ms, waited_ms, err, errlen);
    const char *jpeg_why = "";
    *jpeg = startup_take_jpeg(r->gpu_startup, &jpeg_why);
    startup_free(r->gpu_startup);
    r->gpu_startup = NULL;
    if (rc == IP_OK && r->gpu_jpeg && !*jpeg && r->o->jpeg_gpu_required) {
        snprintf(err, errlen, "--jpeg-decoder gpu: %s", jpeg_why);
        return IP_EUNSUPPORTED;
    }
    if (rc == IP_OK || r->o->device == DEV_GPU) return rc;
    snprintf(r->why, sizeof r->why, "%s", err);
    r->dev = EXEC_CPU;
    return IP_OK;
}

static void announce(const one_run *r)
{
    char name[256] = "GPU";
    if (r->dev == EXEC_GPU) {
        gpu_device_name(0, name, sizeof name);
        say(r->o, "device: GPU 0 (%s)%s%s%s%s", name, r->o->transfer == EXEC_ZEROCOPY ? ", zero-copy transfers" : "",
            r->why[0] ? " (" : "", r->why, r->why[0] ? ")" : "");
    } else {
        say(r->o, "device: CPU, %d threads%s%s%s", cpu_threads(r->o), r->why[0] ? " (" : "", r->why, r->why[0] ? ")" : "");
    }
}

typedef struct {
    double decode_ms, encode_ms, startup_ms, startup_wait_ms;
    double fuse_ms;           /* NVRTC compiling beside decoding */
    int fuse_compiled;        /* kernels it compiled */
} run_times;

static void print_profile(const plan *p, const exec_profile *prof, exec_device dev, const run_times *t,
                          const jpeg_gpu *jpeg)
{
    fprintf(stderr, "profile:\n");
    if (dev == EXEC_GPU)
        fprintf(stderr, "  %-22s %9.3f ms (beside decoding; waited %.3f ms for it)\n", "gpu start-up", t->startup_ms,
                t->startup_wait_ms);
    if (jpeg) {
        jpeg_gpu_open_times j = jpeg_gpu_times(jpeg);
        fprintf(stderr, "  %-22s %9.3f ms (in start-up: library %.1f, handle %.1f in %d tries, decoder %.1f, "
                "encoder %.1f; %s)\n", "nvJPEG open", j.library_ms + j.handle_ms + j.decoder_ms + j.encoder_ms,
                j.library_ms, j.handle_ms, j.handle_tries, j.decoder_ms, j.encoder_ms, jpeg_gpu_description(jpeg));
    }
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

/* Runs the plan on dev; a GPU failure under --device auto is retried on the CPU. */
static int run_stages(const cli_options *o, plan *p, exec_device *dev, exec_ctx **ctx, const ip_image *in,
                      const char *in_path, ip_image *out, exec_profile *prof, char *err, size_t errlen)
{
    exec_options eo = { *dev, 0, o->threads, o->transfer, o->profile, 0 };
    exec_fusion_options fo = { o->no_fuse, 0, o->profile };
    int rc = *ctx ? IP_OK : exec_create(ctx, &eo, err, errlen);
    if (rc == IP_OK) exec_set_fusion(*ctx, &fo);
    if (rc == IP_OK) rc = exec_run(*ctx, p, in, in_path, out, prof, err, errlen);
    if (rc == IP_OK && exec_take_notes(*ctx)[0]) say(o, "%s", exec_take_notes(*ctx));
    if (rc != IP_OK && *dev == EXEC_GPU && o->device == DEV_AUTO && !in->on_device) {
        fprintf(stderr, "imgpipe: warning: %s: %s; running this image on the CPU\n", in_path, err);
        exec_destroy(*ctx);
        *ctx = NULL;
        eo.device = *dev = EXEC_CPU;
        rc = exec_create(ctx, &eo, err, errlen);
        if (rc == IP_OK) rc = exec_run(*ctx, p, in, in_path, out, prof, err, errlen);
    }
    return rc;
}

/* A JPEG that nvJPEG may take: its header is read first (from the file's bytes, without decoding)
 * so that auto can weigh decoding on the GPU and start it before any pixel is decoded. */
static void plan_jpeg_early(one_run *r, const char *in_path)
{
    unsigned char *data = NULL;
    size_t len = 0;
    jpeg_layout L;
    char err[256];
    if (io_read_file(in_path, &data, &len, err, sizeof err) == IP_OK &&
        jpeg_layout_read(data, len, &L, err, sizeof err) == IP_OK) {
        ip_shape shape = { L.width, L.height, L.components == 1 ? 1 : 3, IP_U8 };
        if (plan_on_shape(r, &shape, err, sizeof err) != IP_OK) r->decided = 1;   /* io_read says why */
    }
    free(data);
}

/* Decodes the input: through nvJPEG into device memory where it takes the file, else on the CPU
 * (which also gives the message for a file that cannot be read). */
static int decode_input(one_run *r, jpeg_gpu *jpeg, exec_ctx *ctx, const char *in_path, ip_image *in, char *err,
                        size_t errlen)
{
    io_options io = r->o->io;
    io.on_shape = plan_on_shape;
    io.on_shape_user = r;
    io.meta = r->o->strip ? NULL : &r->meta;
    io.warnings = &r->warnings;
    if (r->dev == EXEC_GPU && jpeg_route_wanted(jpeg, r->in_format, r->o->transfer)) {
        int rc = jpeg_route_decode(jpeg, ctx, r->p, in_path, &io, in, err, errlen);
        /* Declined (an oriented file, say) before the shape was planned: the CPU reader plans it. */
        if (rc == IP_OK || (r->failed && rc != IP_EUNSUPPORTED)) return rc;
    }
    return io_read(in_path, &io, in, err, errlen);
}

static int write_output(one_run *r, jpeg_gpu *jpeg, const ip_image *out, const char *out_path, char *err,
                        size_t errlen)
{
    io_options io = r->o->io;
    io.meta = r->o->strip ? NULL : &r->meta;
    if (out->on_device) return jpeg_route_write(jpeg, out, out_path, &io, err, errlen);
    return io_write(out_path, out, &io, err, errlen);
}

/* Half the machine's memory: a run that keeps to it leaves the rest to everything else. */
static uint64_t default_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : (uint64_t)4 << 30;
}

static void print_stream_profile(const plan *p, const run_stream_report *rep, band_place place, uint64_t gpu_limit)
{
    const stream_profile *pr = &rep->prof;
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
    /* where the stages' thread stood still: the slower of decode and encode shows here */
    if (pr->overlapped)
        fprintf(stderr, "  %-22s %9.3f ms waiting for decoded bands, %.3f ms handing rows to the encoder\n", "stages' thread",
                pr->source_wait_ms, pr->sink_wait_ms);
    for (int i = 0; pr->n_workers > 1 && i < pr->n_workers; i++) {
        char label[32];
        if (place == BAND_ON_GPU) snprintf(label, sizeof label, "worker %d (GPU %d)", i, pr->workers[i].gpu);
        else snprintf(label, sizeof label, "worker %d", i);
        fprintf(stderr, "  %-22s %9.3f ms busy, %d chunk%s\n", label, pr->workers[i].busy_ms, pr->workers[i].chunks,
                pr->workers[i].chunks == 1 ? "" : "s");
    }
    if (place != BAND_ON_GPU) return;
    char planned[32], limit[32];
    stream_bytes_text(rep->planned_device_bytes, planned, sizeof planned);
    stream_bytes_text(gpu_limit, limit, sizeof limit);
    fprintf(stderr, "  gpu memory: peak %.1f MiB (bands sized to %s, within %s)\n",
            (double)pr->gpu_peak_bytes / 1048576.0, planned, limit);
}

/* An image decoded past damage says so once, with the first warning. */
static void warn_decoded(const cli_options *o, const char *path, const io_warnings *w)
{
    if (w->count > 1) say(o, "warning: %s: %s (decoded anyway; %d warnings)", path, w->first, w->count);
    else if (w->count == 1) say(o, "warning: %s: %s (decoded anyway)", path, w->first);
}

#define NOT_STREAMED (-1)

/* A streamed run when --stream and the memory limits call for one and the input allows it;
 * NOT_STREAMED (nothing read past the header, nothing written) for the whole-image path. */
typedef struct {
    io_meta meta;
} stream_meta;

/* The input's metadata, carried to a streamed output as to a whole one. An image that must be
 * turned upright by its EXIF orientation needs all of it first: it is not streamed. */
static int stream_meta_read(const cli_options *o, const char *in_path, stream_meta *sm)
{
    meta_init(&sm->meta);
    FILE *f = fopen(in_path, "rb");
    io_format fmt = io_detect_file(in_path);
    int rc = f && fmt != IO_FMT_UNKNOWN ? meta_read(f, fmt, o->io.page, &sm->meta) : IP_OK;
    if (f) fclose(f);
    if (rc == IP_OK && !(o->io.autorotate && sm->meta.orientation != 1)) return CLI_OK;
    if (o->stream == STREAM_ON && rc == IP_OK) say(o, "%s: not streamed: its EXIF orientation turns it", in_path);
    meta_clear(&sm->meta);
    return NOT_STREAMED;
}

static int try_stream_with(const cli_options *o, plan *p, const char *in_path, const char *out_path,
                           const run_stream_options *sop);

static int try_stream(const cli_options *o, plan *p, const char *in_path, const char *out_path)
{
    if (o->stream == STREAM_OFF) return NOT_STREAMED;
    stream_meta sm;
    int rc = stream_meta_read(o, in_path, &sm);
    if (rc != CLI_OK) return rc;
    run_stream_options so = { o->io, o->threads, o->memory ? o->memory : default_memory(), BAND_ON_HOST, 0, 1, { 0 } };
    so.io.meta = o->strip ? NULL : &sm.meta;
    io_warnings warnings = { 0 };
    so.io.warnings = &warnings;
    rc = try_stream_with(o, p, in_path, out_path, &so);
    if (rc == CLI_OK) warn_decoded(o, in_path, &warnings);
    meta_clear(&sm.meta);
    return rc;
}

static int parse_gpu_list(const char *text, int count, batch_options *b);

/* IMGPIPE_STREAM_CPU_WORKERS=N (a test hook, not an option): a streamed CPU run deals each
 * image's rows to N threads, as --gpus does to GPUs. */
static int cpu_workers(void)
{
    const char *v = getenv("IMGPIPE_STREAM_CPU_WORKERS");
    long n = v && *v ? strtol(v, NULL, 10) : 1;
    return n < 1 ? 1 : n > BAND_MAX_WORKERS ? BAND_MAX_WORKERS : (int)n;
}

/* Where a streamed run's bands go: the GPU under --device gpu, and under auto when the estimate
 * for the whole image favours it; one worker per entry of --gpus (a GPU listed twice gets two). */
static int choose_stream_place(const cli_options *o, const plan *p, const ip_shape *shape, const char *in_path,
                               const char *out_path, run_stream_options *so, char *why, size_t whylen)
{
    so->place = BAND_ON_HOST;
    so->n_workers = cpu_workers();
    why[0] = '\0';
    char none[256] = "";
    int count = o->device == DEV_CPU ? 0 : gpu_device_count(none, sizeof none);
    if (o->device == DEV_GPU && count == 0) {
        fail("--device gpu: %s", none);
        return CLI_USAGE;
    }
    if (count == 0) return CLI_OK;
    if (o->device == DEV_AUTO) {
        cost_estimate est;
        cost_setting set = { io_detect_file(in_path), io_format_from_ext(out_path), cpu_threads(o), 0 };
        cost_estimate_plan(p, shape, &set, &est);
        if (est.cpu_ms <= est.gpu_ms) {
            snprintf(why, whylen, "auto: the CPU is estimated faster for this image, %.0f ms against %.0f ms on the GPU",
                     est.cpu_ms, est.gpu_ms);
            return CLI_OK;
        }
        snprintf(why, whylen, "auto: estimated %.0f ms against %.0f ms on the CPU", est.gpu_ms, est.cpu_ms);
    }
    /* Without --gpus, one GPU: on two H200s every measured pipeline, eight median radius=7 stages
     * included, ran at 0.71x to 1.07x dealt to both, bound by the codecs (bench/RESULTS.md, issue 16). */
    batch_options b;
    memset(&b, 0, sizeof b);
    int rc = parse_gpu_list(o->gpus ? o->gpus : "0", count, &b);
    if (rc != CLI_OK) return rc;
    so->place = BAND_ON_GPU;
    so->n_workers = b.n_gpus < BAND_MAX_WORKERS ? b.n_gpus : BAND_MAX_WORKERS;
    for (int i = 0; i < so->n_workers; i++) so->gpu_ids[i] = b.gpu_ids[i];
    return CLI_OK;
}

/* --gpu-memory, or half of what is free on the first worker's GPU now. */
static int stream_gpu_limit(const cli_options *o, run_stream_options *so, char *err, size_t errlen)
{
    if (o->gpu_memory) {
        so->gpu_memory_limit = o->gpu_memory;
        return IP_OK;
    }
    size_t free_bytes = 0, total = 0;
    int rc = gpu_start(so->gpu_ids[0], err, errlen);
    if (rc == IP_OK) rc = gpu_memory_info(&free_bytes, &total, err, errlen);
    so->gpu_memory_limit = free_bytes / 2;
    return rc;
}

static void announce_stream(const cli_options *o, const run_stream_options *so, const char *why)
{
    char limit[32], gpu_limit[32], name[256] = "GPU", workers[48] = "";
    stream_bytes_text(so->memory_limit, limit, sizeof limit);
    if (so->n_workers > 1) snprintf(workers, sizeof workers, "; %d workers", so->n_workers);
    if (so->place == BAND_ON_HOST) {
        say(o, "device: CPU, %d threads (streamed in bands within %s%s%s%s)", cpu_threads(o), limit, workers,
            why[0] ? "; " : "", why);
        return;
    }
    stream_bytes_text(so->gpu_memory_limit, gpu_limit, sizeof gpu_limit);
    gpu_device_name(so->gpu_ids[0], name, sizeof name);
    say(o, "device: GPU %d (%s) (streamed in bands within %s, %s of GPU memory%s%s%s)", so->gpu_ids[0], name, limit,
        gpu_limit, workers, why[0] ? "; " : "", why);
}

static int try_stream_with(const cli_options *o, plan *p, const char *in_path, const char *out_path,
                           const run_stream_options *sop)
{
    run_stream_options so = *sop;
    run_stream *rs;
    ip_shape shape;
    char err[1024], why[512];
    int rc = run_stream_open(&rs, p, in_path, out_path, &so, &shape, err, sizeof err);
    if (rc == IP_EUNSUPPORTED) {
        if (o->stream == STREAM_ON) say(o, "%s: not streamed: %s", in_path, err);
        return NOT_STREAMED;
    }
    /* as the whole-image path: the plan's and the output's errors are usage errors, said as they
     * are; the file's fail the image */
    if (rc == IP_EINVAL) {
        fail("%s", err);
        return CLI_USAGE;
    }
    if (rc != IP_OK) {
        fail("%s: %s", in_path, err);
        return CLI_IMAGE_FAILED;
    }
    uint64_t whole = run_stream_whole_bytes(rs);
    if (o->stream == STREAM_AUTO && whole <= so.memory_limit && !(o->gpu_memory && whole > o->gpu_memory)) {
        run_stream_cancel(rs);
        return NOT_STREAMED;
    }
    if ((rc = choose_stream_place(o, p, &shape, in_path, out_path, &so, why, sizeof why)) != CLI_OK) {
        run_stream_cancel(rs);
        return rc;
    }
    if (so.place == BAND_ON_GPU && stream_gpu_limit(o, &so, err, sizeof err) != IP_OK) {
        run_stream_cancel(rs);
        fail("--device gpu: %s", err);
        return CLI_USAGE;
    }
    if (so.place == BAND_ON_HOST && so.n_workers > 1) so.threads = (cpu_threads(o) + so.n_workers - 1) / so.n_workers;
    run_stream_set_placement(rs, &so);
    if ((rc = run_stream_budget(rs, err, sizeof err)) != IP_OK) {
        run_stream_cancel(rs);
        fail("%s: %s", in_path, err);
        return CLI_USAGE;
    }
    announce_stream(o, &so, why);
    run_stream_report rep;
    rc = run_stream_finish(rs, &rep, err, sizeof err);
    if (rc != IP_OK && so.place == BAND_ON_GPU && o->device == DEV_AUTO && (rc == IP_ECUDA || rc == IP_ENOMEM)) {
        fprintf(stderr, "imgpipe: warning: %s: %s; running this image on the CPU\n", in_path, err);
        cli_options on_cpu = *o;
        on_cpu.device = DEV_CPU;
        return try_stream_with(&on_cpu, p, in_path, out_path, sop);
    }
    if (rc != IP_OK) {
        fail("%s: %s", in_path, err);
        return CLI_IMAGE_FAILED;
    }
    if (o->profile) print_stream_profile(p, &rep, so.place, so.gpu_memory_limit);
    return CLI_OK;
}

/* One image through the plan. Under --device gpu, and under auto when the estimate favours it,
 * the GPU starts on a thread while the image is read. */
static int process_image(const cli_options *o, plan *p, const char *in_path, const char *out_path)
{
    int streamed = try_stream(o, p, in_path, out_path);
    if (streamed != NOT_STREAMED) return streamed;
    char err[1024], start_err[512];
    ip_image in = { 0 }, out;
    one_run r = { .o = o, .p = p, .out_path = out_path, .in_format = io_detect_file(in_path), .dev = EXEC_CPU };
    meta_init(&r.meta);
    r.gpu_jpeg = o->jpeg_gpu_required && jpeg_gpu_built() && o->transfer == EXEC_COPY &&
                 (r.in_format == IO_FMT_JPEG || io_format_from_ext(out_path) == IO_FMT_JPEG);
    if (o->device == DEV_GPU && begin_gpu(&r, err, sizeof err) != IP_OK) {
        fail("%s", err);
        return CLI_IMAGE_FAILED;
    }
    if (r.gpu_jpeg && r.in_format == IO_FMT_JPEG && o->device == DEV_AUTO) plan_jpeg_early(&r, in_path);
    run_times t = { 0 };
    exec_ctx *ctx = NULL;
    jpeg_gpu *jpeg = NULL;
    double t0 = now_ms();
    int start_rc = IP_OK, rc = IP_OK;
    if (r.gpu_jpeg && r.in_format == IO_FMT_JPEG)   /* nvJPEG decodes on the GPU: it must be up first */
        start_rc = finish_start(&r, &ctx, &jpeg, &t.startup_ms, &t.startup_wait_ms, start_err, sizeof start_err);
    if (start_rc == IP_OK) rc = decode_input(&r, jpeg, ctx, in_path, &in, err, sizeof err);
    t.decode_ms = now_ms() - t0;
    if (start_rc == IP_OK)
        start_rc = finish_start(&r, &ctx, &jpeg, &t.startup_ms, &t.startup_wait_ms, start_err, sizeof start_err);
    t.fuse_compiled = fuse_warm_end(r.warm, &t.fuse_ms);
    r.warm = NULL;
    if (rc != IP_OK || start_rc != IP_OK) {
        if (rc != IP_OK && r.failed) fail("%s", err);
        else if (rc != IP_OK) fail("%s: %s", in_path, err);
        else fail("--device gpu: %s", start_err);
        if (!in.on_device) img_free(&in);
        jpeg_gpu_close(jpeg);
        exec_destroy(ctx);
        meta_clear(&r.meta);
        return rc != IP_OK && !r.failed ? CLI_IMAGE_FAILED : CLI_USAGE;
    }
    warn_decoded(o, in_path, &r.warnings);
    announce(&r);
    exec_profile prof;
    if (ctx) exec_keep_result_on_device(ctx, jpeg && io_format_from_ext(out_path) == IO_FMT_JPEG);
    rc = run_stages(o, p, &r.dev, &ctx, &in, in_path, &out, &prof, err, sizeof err);
    if (rc == IP_OK) {
        t0 = now_ms();
        rc = write_output(&r, jpeg, &out, out_path, err, sizeof err);
        t.encode_ms = now_ms() - t0;
        if (rc == IP_OK && o->profile) print_profile(p, &prof, r.dev, &t, jpeg);
        if (rc != IP_OK) fail("%s: %s", out_path, err);
    } else {
        fail("%s: %s", in_path, err);
    }
    jpeg_gpu_close(jpeg);
    exec_destroy(ctx);
    if (!in.on_device) img_free(&in);
    meta_clear(&r.meta);
    return rc == IP_OK ? CLI_OK : CLI_IMAGE_FAILED;
}

/* Ctrl-C asks the batch to stop taking images; a signal handler can only reach a global. */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct {
    const cli_options *o;
    int tty;
    double last_print;
    char **failures;
    int n_failures;
    char shard[48];   /* "shard I/N: " or "" */
} batch_view;

static void format_duration(double s, char *buf, size_t len)
{
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void on_progress(void *user, const batch_progress *p)
{
    batch_view *v = user;
    int finished = p->done + p->failed + p->resumed;
    if (v->o->quiet) return;
    if (!v->tty && p->elapsed_s - v->last_print < 5.0 && finished < p->total) return;
    if (v->tty && p->elapsed_s - v->last_print < 0.1 && finished < p->total) return;
    v->last_print = p->elapsed_s;
    double rate = p->elapsed_s > 0 ? (p->done + p->failed) / p->elapsed_s : 0;
    char elapsed[32], eta[32] = "?";
    format_duration(p->elapsed_s, elapsed, sizeof elapsed);
    if (rate > 0) format_duration((p->total - finished) / rate, eta, sizeof eta);
    fprintf(stderr, "%s%d/%d images, %.1f images/s, %.1f MB/s, elapsed %s, ETA %s%s", v->tty ? "\r" : "imgpipe: ",
            finished, p->total, rate, p->elapsed_s > 0 ? (double)p->bytes_in / 1e6 / p->elapsed_s : 0.0, elapsed, eta,
            v->tty ? "\033[K" : "\n");
    fflush(stderr);
}

static void on_failure(void *user, const char *path, const char *message)
{
    batch_view *v = user;
    size_t len = strlen(path) + strlen(message) + 3;
    char *line = malloc(len);
    if (line) {
        snprintf(line, len, "%s: %s", path, message);
        char **grown = realloc(v->failures, (size_t)(v->n_failures + 1) * sizeof *grown);
        if (grown) {
            v->failures = grown;
            v->failures[v->n_failures++] = line;
        } else {
            free(line);
        }
    }
    fprintf(stderr, "%simgpipe: %s: %s\n", v->tty ? "\r\033[K" : "", path, message);
}

static void on_warning(void *user, const char *path, const io_warnings *w)
{
    batch_view *v = user;
    if (v->tty && !v->o->quiet) fputs("\r\033[K", stderr);
    warn_decoded(v->o, path, w);
}

static void on_note(void *user, const char *message)
{
    batch_view *v = user;
    if (!v->o->quiet) fprintf(stderr, "%simgpipe: %s\n", v->tty ? "\r\033[K" : "", message);
}

static int parse_gpu_list(const char *text, int count, batch_options *b)
{
    if (!text || strcmp(text, "all") == 0) {
        b->n_gpus = count < BATCH_MAX_GPUS ? count : BATCH_MAX_GPUS;
        for (int i = 0; i < b->n_gpus; i++) b->gpu_ids[i] = i;
        return CLI_OK;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    b->n_gpus = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long id;
        if (!parse_long(tok, 0, count - 1, &id) || b->n_gpus == BATCH_MAX_GPUS)
            return usage_error("--gpus: '%s' is not a GPU of this machine (it has %d)", tok, count);
        b->gpu_ids[b->n_gpus++] = (int)id;
    }
    return b->n_gpus ? CLI_OK : usage_error("--gpus needs all or a list such as 0,2");
}

/* pl: under mpirun, the rank's place (its share of the cores, its GPU); NULL otherwise. */
static int batch_setup(const cli_options *o, exec_device dev, const char *in, const char *out, const mpi_place *pl,
                       batch_options *b)
{
    memset(b, 0, sizeof *b);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (pl) cores = batch_mpi_cores(pl, cores);
    b->input = in;
    b->output_dir = out;
    b->recursive = o->recursive;
    b->resume = o->resume;
    b->format = !o->format ? IO_FMT_UNKNOWN : strcmp(o->format, "png") == 0 ? IO_FMT_PNG
              : strcmp(o->format, "jpg") == 0 ? IO_FMT_JPEG : IO_FMT_TIFF;
    b->jobs = o->jobs ? o->jobs : (int)cores;
    b->device = dev;
    b->threads = o->threads ? o->threads : (dev == EXEC_CPU ? (int)(cores / b->jobs > 0 ? cores / b->jobs : 1) : 1);
    b->transfer = o->transfer;
    b->cpu_fallback = o->device == DEV_AUTO;
    b->jpeg_on_gpu = o->jpeg_gpu_required;
    b->verbose = o->profile;
    b->no_fuse = o->no_fuse;
    b->shard_index = o->shard_index;
    b->shard_count = o->shard_count;
    b->all_pages = o->all_pages;
    b->strip = o->strip;
    b->io = o->io;
    /* Images in flight already share the cores; each codec takes its share. */
    b->io.threads = o->threads ? o->threads : (int)(cores / b->jobs > 0 ? cores / b->jobs : 1);
    b->stop = &interrupted;
    if (dev == EXEC_GPU) {
        char why[128];
        int rc = parse_gpu_list(o->gpus, gpu_device_count(why, sizeof why), b);
        if (rc == CLI_OK && pl) batch_mpi_pick_gpu(pl, b);
        return rc;
    }
    return CLI_OK;
}

static const char *warned_text(const batch_progress *r, char *buf, size_t len)
{
    if (r->warned) snprintf(buf, len, ", %d decoded with warnings", r->warned);
    else buf[0] = '\0';
    return buf;
}

static void print_batch_summary(const cli_options *o, const batch_view *v, const batch_progress *r)
{
    char warned[64];
    if (v->tty && !o->quiet) fputc('\n', stderr);
    if (!o->quiet || r->failed)
        fprintf(stderr, "imgpipe: %s%d succeeded, %d failed, %d skipped (output exists), %d not images%s; %.1f s%s\n",
                v->shard, r->done, r->failed, r->resumed, r->not_images, warned_text(r, warned, sizeof warned),
                r->elapsed_s, r->stopped ? "; interrupted: run again with --resume to finish" : "");
    for (int i = 0; i < v->n_failures; i++) fprintf(stderr, "  failed: %s\n", v->failures[i]);
}

/* Under mpirun, after the summary: each rank's share and speed. */
static void print_rank_lines(const cli_options *o, const batch_mpi *mpi, const batch_progress *r)
{
    int n;
    const batch_mpi_rank_stats *s = batch_mpi_stats(mpi, &n);
    for (int k = 0; k < n && !o->quiet; k++)
        fprintf(stderr, "  rank %d (%s): %d done, %d failed, %d skipped; %.1f images/s%s\n", k, s[k].host, s[k].done,
                s[k].failed, s[k].resumed, s[k].seconds > 0 ? (s[k].done + s[k].failed) / s[k].seconds : 0.0,
                s[k].lost ? "; lost (died or stopped answering)" : "");
    if (n && !o->quiet)
        fprintf(stderr, "  all %d ranks: %.1f images/s\n", n, r->elapsed_s > 0 ? (r->done + r->failed) / r->elapsed_s : 0.0);
}

/* Under mpirun, every rank but 0 stays silent except for its own errors. */
static int batch_outcome(const cli_options *o, batch_view *v, const batch_mpi *mpi, int rank, int rc,
                         const char *err, const batch_progress *result)
{
    if (rc != IP_OK && rank > 0) fail("rank %d: %s", rank, err);
    else if (rc != IP_OK) fail("%s", err);
    if (rc != IP_OK) return rc == IP_EINVAL ? CLI_USAGE : CLI_IMAGE_FAILED;
    if (rank > 0) return CLI_OK;
    print_batch_summary(o, v, result);
    if (mpi) print_rank_lines(o, mpi, result);
    return result->failed || result->stopped ? CLI_IMAGE_FAILED : CLI_OK;
}

static int cmd_batch(const cli_options *o, const plan *p, exec_device dev, const char *in, const char *out)
{
    mpi_place place = { 1, 0, 1, 0 };
    int under_mpi = mpi_lib_place(&place);
    batch_options b;
    int rc = batch_setup(o, dev, in, out, under_mpi ? &place : NULL, &b);
    if (rc) return rc;
    if (dev == EXEC_GPU && !o->quiet) say(o, "%d worker%s on %d GPU%s", b.jobs, b.jobs == 1 ? "" : "s", b.n_gpus, b.n_gpus == 1 ? "" : "s");
    batch_view view = { o, isatty(STDERR_FILENO), -1e9, NULL, 0, "" };
    if (o->shard_count) snprintf(view.shard, sizeof view.shard, "shard %d/%d: ", o->shard_index, o->shard_count);
    if (under_mpi) snprintf(view.shard + strlen(view.shard), sizeof view.shard - strlen(view.shard), "%d ranks: ", place.size);
    batch_callbacks cb = { on_progress, on_failure, on_note, on_warning, &view };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sa.sa_flags = (int)SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (under_mpi) sigaction(SIGUSR1, &sa, NULL);   /* mpirun forwards it at once, unlike Ctrl-C */
    batch_progress result;
    char err[1024];
    batch_mpi *mpi = NULL;
    if (under_mpi && batch_mpi_open(&mpi, &place, err, sizeof err) != IP_OK) {
        fail("rank %d: %s", place.rank, err);
        return CLI_USAGE;
    }
    rc = mpi ? batch_mpi_run(mpi, &b, p, &cb, &result, err, sizeof err) : batch_run(&b, p, &cb, &result, err, sizeof err);
    rc = batch_outcome(o, &view, mpi, place.rank, rc, err, &result);
    batch_mpi_close(mpi);
    for (int i = 0; i < view.n_failures; i++) free(view.failures[i]);
    free(view.failures);
    return rc;
}

/* auto, for a folder: the CPU path when the estimate says the stages cost the CPU's workers less
 * than the GPU path's start-up and staging would (light pipelines), so the GPU is never started. */
static int choose_folder_device(const cli_options *o, const plan *p, const char *in, const char *out,
                                exec_device *dev)
{
    mpi_place place;
    if (o->device != DEV_AUTO || !gpu_built() || mpi_lib_place(&place)) return choose_device(o, dev);
    batch_options b;
    folder_estimate est;
    char err[1024];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (batch_setup(o, EXEC_CPU, in, out, NULL, &b) != CLI_OK ||
        folder_estimate_run(&b, p, cores > 0 ? (int)cores : 1, &est, err, sizeof err) != IP_OK ||
        est.gpu_s < est.cpu_s)
        return choose_device(o, dev);
    say(o, "device: CPU, %d workers (auto: the stages of %d image%s would take the cores about %.1f s, less than "
        "the GPU's start-up and staging, about %.1f s)", b.jobs, est.n_images, est.n_images == 1 ? "" : "s",
        est.cpu_s, est.gpu_s);
    *dev = EXEC_CPU;
    return CLI_OK;
}

/* One image's output temporary (io_options.on_temp): a signal that ends the run removes it, as a
 * finished or failed write does; a signal handler can only reach a global. */
static char live_temp[4096];
static volatile sig_atomic_t live_temp_set;

static void on_output_temp(void *user, const char *tmp_path, int made)
{
    (void)user;
    live_temp_set = 0;
    size_t len = strlen(tmp_path);
    if (made && len < sizeof live_temp) {
        memcpy(live_temp, tmp_path, len + 1);
        live_temp_set = 1;
    }
}

static void on_ending_signal(int sig)
{
    if (live_temp_set) unlink(live_temp);
    raise(sig);   /* SA_RESETHAND: the default action, which ends the process as before */
}

/* A signal ignored on entry (nohup, a script's background job) stays ignored. */
static void catch_ending_signal(int sig, const struct sigaction *sa)
{
    struct sigaction old;
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN) return;
    sigaction(sig, sa, NULL);
}

/* One image: the output's temporary is removed if Ctrl-C or a TERM or HUP ends the run. */
static int run_one_image(const cli_options *o, plan *p, const char *in_path, const char *out_path)
{
    cli_options one = *o;
    one.io.on_temp = on_output_temp;
    one.io.on_temp_user = NULL;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_ending_signal;
    sa.sa_flags = (int)SA_RESETHAND;
    catch_ending_signal(SIGINT, &sa);
    catch_ending_signal(SIGTERM, &sa);
    catch_ending_signal(SIGHUP, &sa);
    return process_image(&one, p, in_path, out_path);
}

static int cmd_run(const cli_options *o)
{
    int need = o->expr ? 2 : 3;
    if (o->n_positional != need)
        return usage_error(o->expr ? "run -e TEXT needs IN and OUT" : "run needs PIPELINE, IN and OUT");
    const char *in_path = o->positional[need - 2], *out_path = o->positional[need - 1];
    int is_batch = batch_is_batch_input(in_path);
    if (!is_batch && o->shard_count) return usage_error("--shard applies to a folder or an @LIST, not one image");
    mpi_place place;
    if (mpi_lib_place(&place)) {   /* under mpirun: only rank 0 says what is wrong */
        if (!mpi_lib_built())
            return place.rank ? CLI_USAGE : usage_error("run under mpirun, but imgpipe was built without MPI "
                                                        "(-DIMGPIPE_MPI=ON): run one copy, or use --shard I/N");
        if (!is_batch)
            return place.rank ? CLI_USAGE : usage_error("under mpirun, IN must be a folder or an @LIST, not one image");
        if (o->all_pages)   /* rank 0 hands out files, not pages: the other ranks would read page 0 */
            return place.rank ? CLI_USAGE : usage_error("--all-pages does not run under mpirun yet: run one copy "
                                                        "per host with --shard I/N");
    }
    if (!is_batch && o->all_pages)
        return usage_error("--all-pages applies to a folder or an @LIST; for one image choose a page with --page N");
    if (o->all_pages && o->page_given) return usage_error("--page and --all-pages exclude each other");
    if (!is_batch && io_format_from_ext(out_path) == IO_FMT_UNKNOWN)
        return usage_error("%s: cannot tell the output format from its extension: use .png, .jpg, .jpeg, .tif or .tiff",
                           out_path);
    registry reg;
    plan p;
    exec_device dev;
    int rc = load_registry(o, &reg);
    if (rc) return rc;
    rc = load_plan(o, o->expr ? NULL : o->positional[0], &reg, &p);
    if (rc == CLI_OK) {
        gpu_prefer_eager_loading();
        if (!is_batch) {
            rc = check_gpu_build(o);
            if (rc == CLI_OK) rc = run_one_image(o, &p, in_path, out_path);
        } else if ((rc = choose_folder_device(o, &p, in_path, out_path, &dev)) == CLI_OK) {
            rc = cmd_batch(o, &p, dev, in_path, out_path);
        }
        plan_free(&p);
    }
    registry_free(&reg);
    return rc;
}

static int cmd_check(const cli_options *o)
{
    if (o->n_positional != (o->expr ? 0 : 1)) return usage_error("check needs PIPELINE or -e TEXT");
    registry reg;
    plan p;
    int rc = load_registry(o, &reg);
    if (rc) return rc;
    rc = load_plan(o, o->expr ? NULL : o->positional[0], &reg, &p);
    if (rc == CLI_OK) {
        char err[1024], in_text[64], out_text[64];
        ip_shape final;
        if (plan_shapes(&p, &o->check_shape, &final, err, sizeof err) != IP_OK) {
            fail("%s", err);
            rc = CLI_USAGE;
        } else if (!o->quiet) {
            plan_shape_text(&o->check_shape, in_text, sizeof in_text);
            plan_shape_text(&final, out_text, sizeof out_text);
            printf("%s: ok: %d stage%s, %s in -> %s out\n", p.source, p.n, p.n == 1 ? "" : "s", in_text, out_text);
        }
        plan_free(&p);
    }
    registry_free(&reg);
    return rc;
}

static const char *type_name(ip_type t)
{
    static const char *const names[] = { "int", "float", "bool", "choice", "text", "matrix", "path" };
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

/* "a|b|c" as "a, b, c" */
static void choices_text(const char *choices, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *c = choices; *c && n + 3 < len; c++) {
        if (*c == '|') {
            buf[n++] = ',';
            buf[n++] = ' ';
        } else {
            buf[n++] = *c;
        }
    }
    buf[n] = '\0';
}

static void print_param(const ip_param *pa)
{
    char range[256] = "", words[200] = "";
    if (pa->choices) choices_text(pa->choices, words, sizeof words);
    if (pa->choices && pa->type == IP_ENUM) snprintf(range, sizeof range, "one of %s", words);
    else if (pa->min < pa->max && pa->type == IP_INT) snprintf(range, sizeof range, "%.0f to %.0f", pa->min, pa->max);
    else if (pa->min < pa->max) snprintf(range, sizeof range, "%g to %g", pa->min, pa->max);
    if (pa->choices && pa->type != IP_ENUM) {
        size_t used = strlen(range);
        snprintf(range + used, sizeof range - used, "%sor %s", used ? ", " : "", words);
    }
    printf("  %-10s %-7s default %-12s %s\n", pa->name, type_name(pa->type),
           pa->default_text && *pa->default_text ? pa->default_text : "(none)", range);
    if (pa->help) printf("  %-10s %s\n", "", pa->help);
}

static int cmd_plugins(const cli_options *o)
{
    if (o->n_positional > 1) return usage_error("plugins takes at most one STAGE");
    registry reg;
    int rc = load_registry(o, &reg);
    if (rc) return rc;
    if (o->n_positional == 0) {
        for (int i = 0; i < reg.n; i++)
            printf("%-12s %s\n", reg.plugins[i].stage->name, reg.plugins[i].stage->summary ? reg.plugins[i].stage->summary : "");
        if (reg.n == 0) {
            fail("no plugins found; searched:");
            for (int i = 0; i < reg.n_dirs; i++) fprintf(stderr, "  %s\n", reg.dirs[i]);
            rc = CLI_USAGE;
        }
    } else {
        const reg_plugin *pl = registry_find(&reg, o->positional[0]);
        if (!pl) {
            fail("no stage named '%s' (run 'imgpipe plugins' for the list)", o->positional[0]);
            rc = CLI_USAGE;
        } else {
            const ip_stage *s = pl->stage;
            printf("%s: %s\n  plugin: %s\n  GPU path: %s\n  class: %s\n%sparameters:%s\n", s->name,
                   s->summary ? s->summary : "", pl->path, s->run_gpu ? "yes" : "no", stage_class_text(s),
                   stage_point_cuda(s) ? "  fusion: offers its per-pixel function (CUDA source, see --no-fuse)\n" : "",
                   s->n_params ? "" : " none");
            for (int i = 0; i < s->n_params; i++) print_param(&s->params[i]);
        }
    }
    registry_free(&reg);
    return rc;
}

static int cmd_new_plugin(const cli_options *o)
{
    if (o->n_positional < 1 || o->n_positional > 2) return usage_error("new-plugin needs NAME and optionally DIR");
    const char *name = o->positional[0], *dir = o->n_positional == 2 ? o->positional[1] : name;
    char err[1024], prefix[4096];
    int rc = newplugin_write(name, dir, err, sizeof err);
    if (rc != IP_OK) {
        fail("%s", err);
        return rc == IP_EINVAL ? CLI_USAGE : CLI_IMAGE_FAILED;
    }
    if (newplugin_prefix(prefix, sizeof prefix, err, sizeof err) != IP_OK) snprintf(prefix, sizeof prefix, "PREFIX");
    printf("wrote %s: build it with: cmake -S %s -B %s/build -DCMAKE_PREFIX_PATH=%s && cmake --build %s/build\n",
           dir, dir, dir, prefix, dir);
    return CLI_OK;
}

int cli_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage_text, stdout);
            return CLI_OK;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("imgpipe %s (plugin ABI %d, CUDA %s, MPI %s)\n", IMGPIPE_VERSION, IP_ABI_VERSION,
#ifdef IMGPIPE_HAVE_CUDA
                   "built in",
#else
                   "not built",
#endif
                   mpi_lib_built() ? "built in" : "not built");
            return CLI_OK;
        }
    }
    cli_options o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    mpi_place place;
    if (mpi_lib_place(&place) && place.rank > 0) o.quiet = 1;   /* rank 0 alone reports */
    if (!o.command) {
        fputs(usage_text, stderr);
        return CLI_USAGE;
    }
    if (strcmp(o.command, "run") == 0) return cmd_run(&o);
    if (strcmp(o.command, "check") == 0) return cmd_check(&o);
    if (strcmp(o.command, "plugins") == 0) return cmd_plugins(&o);
    if (strcmp(o.command, "new-plugin") == 0) return cmd_new_plugin(&o);
    return usage_error("unknown command '%s': use run, check, plugins or new-plugin", o.command);
}
