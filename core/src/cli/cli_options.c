#define _POSIX_C_SOURCE 200809L
/* The command line's options: the usage text, and argv parsed into cli_options. */
#include "cli/cli_options.h"
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stream/stream_budget.h"

const char cli_usage_text[] =
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
    "  --device auto|cpu|gpu|gpu+cpu  where to run (default auto: for one image, the device\n"
    "                          estimated to finish first, start-up and copies included; for\n"
    "                          folders, the same estimate over the folder, planned on its first\n"
    "                          image: the CPU alone when the GPU cannot win, else the faster of\n"
    "                          gpu, gpu+cpu and cpu measured on the first images, said in its\n"
    "                          device: line). gpu+cpu, for folders: half the workers on the GPU,\n"
    "                          the rest on the cores, from one queue (for one image: gpu)\n"
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
    "                          pixels then differ from libjpeg-turbo's by up to 3 levels; in a folder\n"
    "                          the workers decode with libjpeg-turbo what the engine would keep them\n"
    "                          waiting for, its first files among them); auto (the\n"
    "                          default) and cpu: libjpeg-turbo, faster for one image and folders of\n"
    "                          up to a few hundred photographs (nvJPEG takes about a second to start);\n"
    "                          gpu is faster past that (800 12-MP JPEGs to JPEG: about 1.5x; README)\n"
    "  --codecs auto|cpu|gpu   auto (the default): on the GPU, nvCOMP (libnvcomp.so.6, when it opens)\n"
    "                          inflates deflate/zstd TIFFs on the card and deflates PNG at --png-level\n"
    "                          0-4 there, and compresses a share of a deflate TIFF's strips on the\n"
    "                          card beside the cores where that is faster (the same pixels; other\n"
    "                          bytes; the cores' strips beside it at a faster level, the file measured\n"
    "                          within 2.5% of the CPU's); cpu: the CPU codecs only (bit-identical to\n"
    "                          --device cpu's; nvJPEG off too); gpu: nvCOMP is required, and every\n"
    "                          TIFF strip of an image run whole is compressed on the card (a\n"
    "                          streamed image's beside the cores, as under auto)\n"
    "  --tiff-compression deflate|lzw|zstd|none  TIFF output compression (default deflate,\n"
    "                          with the predictor)\n"
    "  --tiff-level 1..9       TIFF deflate level (default 6), libdeflate's on the CPU\n"
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
    "                          the GPU (default: half the GPU's free memory for streamed runs);\n"
    "                          nvCOMP's buffers and scratch, where the card encodes or decodes TIFF\n"
    "                          and PNG, are not counted (about 2 GiB for a streamed deflate TIFF)\n"
    "  --stream auto|on|off    run one image in bands of rows, read, processed and written a band\n"
    "                          at a time in bounded memory (TIFF, PNG and JPEG in and out; interlaced\n"
    "                          PNG and some TIFF kinds are read whole). auto (default): streamed\n"
    "                          when the whole image would not fit --memory (or --gpu-memory), and\n"
    "                          wherever it would hold 1 GiB or more whole, as streaming is then\n"
    "                          as fast (-v says why an image ran whole); on: always where the input\n"
    "                          allows. Bands run on the GPU under --device\n"
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
    "  -v, --verbose           say why an image ran whole rather than streamed\n"
    "  -h, --help              this text\n"
    "  --version               the version\n"
    "\n"
    "Plugins are looked for in --plugin-path, then $IMGPIPE_PLUGIN_PATH (colon-separated), then\n"
    "the plugin folder installed beside the executable (../lib/imgpipe/plugins).\n"
    "\n"
    "exit codes: 0 done; 1 an image could not be read, processed or written;\n"
    "            2 a usage or pipeline error (nothing was processed)\n";

/* "imgpipe: " and the message, then end (a newline, or the hint after a usage error). */
static void print_message(const char *fmt, va_list ap, const char *end)
{
    fputs("imgpipe: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(end, stderr);
}

void cli_say(const cli_options *o, const char *fmt, ...)
{
    if (o->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    print_message(fmt, ap, "\n");
    va_end(ap);
}

void cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    print_message(fmt, ap, "\n");
    va_end(ap);
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    print_message(fmt, ap, "\n(see 'imgpipe --help')\n");
    va_end(ap);
    return CLI_USAGE;
}

int cli_parse_gpu_list(const char *text, int count, int *ids, int *n, int max)
{
    if (!text || strcmp(text, "all") == 0) {
        *n = count < max ? count : max;
        for (int i = 0; i < *n; i++) ids[i] = i;
        return CLI_OK;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long id;
        if (!cli_parse_long(tok, 0, count - 1, &id) || *n == max)
            return cli_usage_error("--gpus: '%s' is not a GPU of this machine (it has %d)", tok, count);
        ids[(*n)++] = (int)id;
    }
    return *n ? CLI_OK : cli_usage_error("--gpus needs all or a list such as 0,2");
}

int cli_parse_long(const char *text, long lo, long hi, long *out)
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
    if (!v) return cli_usage_error("%s needs a value", name);
    if (!cli_parse_long(v, lo, hi, out)) return cli_usage_error("%s expects a whole number from %ld to %ld, not '%s'", name, lo, hi, v);
    return CLI_OK;
}

static int parse_option(int argc, char **argv, int *i, cli_options *o)
{
    const char *a = argv[*i], *v;
    long n;
    int rc = CLI_OK;
    if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) o->quiet = 1;
    else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) o->verbose = 1;
    else if (strcmp(a, "-r") == 0 || strcmp(a, "--recursive") == 0) o->recursive = 1;
    else if (strcmp(a, "--resume") == 0) o->resume = 1;
    else if (strcmp(a, "--all-pages") == 0) o->all_pages = 1;
    else if (strcmp(a, "--strip") == 0) o->run.strip = 1;
    else if (strcmp(a, "--no-autorotate") == 0) o->run.io.autorotate = 0;
    else if (is_option(a, "--format")) {
        v = option_value(argc, argv, i, "--format");
        if (!v || (strcmp(v, "png") && strcmp(v, "tif") && strcmp(v, "jpg")))
            return cli_usage_error("--format must be png, tif or jpg");
        o->format = v;
    } else if (is_option(a, "--gpus")) {
        if (!(o->gpus = option_value(argc, argv, i, "--gpus"))) return cli_usage_error("--gpus needs all or a list such as 0,2");
    } else if (is_option(a, "--jobs")) {
        if (!(rc = parse_numeric_option("--jobs", option_value(argc, argv, i, "--jobs"), 1, 1024, &n)))
            o->jobs = (int)n;
    }
    else if (strcmp(a, "--profile") == 0) o->run.profile = 1;
    else if (strcmp(a, "--no-fuse") == 0) o->run.no_fuse = 1;
    else if (strcmp(a, "-e") == 0) {
        if (*i + 1 >= argc) return cli_usage_error("-e needs the pipeline text");
        o->expr = argv[++*i];
    } else if (is_option(a, "--device")) {
        v = option_value(argc, argv, i, "--device");
        if (!v) return cli_usage_error("--device needs auto, cpu, gpu or gpu+cpu");
        o->device_mixed = strcmp(v, "gpu+cpu") == 0;
        if (strcmp(v, "auto") == 0) o->run.device = RUN_DEVICE_AUTO;
        else if (strcmp(v, "cpu") == 0) o->run.device = RUN_DEVICE_CPU;
        else if (strcmp(v, "gpu") == 0 || o->device_mixed) o->run.device = RUN_DEVICE_GPU;
        else return cli_usage_error("--device must be auto, cpu, gpu or gpu+cpu, not '%s'", v);
    } else if (is_option(a, "--transfer")) {
        v = option_value(argc, argv, i, "--transfer");
        if (v && strcmp(v, "copy") == 0) o->run.transfer = EXEC_COPY;
        else if (v && strcmp(v, "zerocopy") == 0) o->run.transfer = EXEC_ZEROCOPY;
        else return cli_usage_error("--transfer must be copy or zerocopy");
    } else if (is_option(a, "--plugin-path")) {
        if (!(o->plugin_path = option_value(argc, argv, i, "--plugin-path")))
            return cli_usage_error("--plugin-path needs a folder");
    } else if (is_option(a, "--threads")) {
        if (!(rc = parse_numeric_option("--threads", option_value(argc, argv, i, "--threads"), 1, 1024, &n)))
            o->run.threads = (int)n;
    } else if (is_option(a, "--png-level")) {
        if (!(rc = parse_numeric_option("--png-level", option_value(argc, argv, i, "--png-level"), 0, 9, &n)))
            o->run.io.png_level = (int)n;
    } else if (is_option(a, "--quality")) {
        if (!(rc = parse_numeric_option("--quality", option_value(argc, argv, i, "--quality"), 1, 100, &n)))
            o->run.io.jpeg_quality = (int)n;
    } else if (is_option(a, "--shard")) {
        v = option_value(argc, argv, i, "--shard");
        int used = 0;
        if (!v || sscanf(v, "%d/%d%n", &o->shard_index, &o->shard_count, &used) != 2 || v[used] ||
            o->shard_count < 1 || o->shard_count > 1000000 || o->shard_index < 0 || o->shard_index >= o->shard_count)
            return cli_usage_error("--shard expects I/N with 0 <= I < N, e.g. --shard 3/16");
    } else if (is_option(a, "--jpeg-decoder")) {
        v = option_value(argc, argv, i, "--jpeg-decoder");
        if (v && strcmp(v, "gpu") == 0) o->run.jpeg_gpu_required = 1;
        else if (v && strcmp(v, "cpu") == 0) o->run.jpeg_gpu_required = 0;
        else if (!v || strcmp(v, "auto") != 0) return cli_usage_error("--jpeg-decoder must be auto, cpu or gpu");
    } else if (is_option(a, "--codecs")) {
        v = option_value(argc, argv, i, "--codecs");
        if (v && strcmp(v, "auto") == 0) o->run.codecs = RUN_CODECS_AUTO;
        else if (v && strcmp(v, "cpu") == 0) o->run.codecs = RUN_CODECS_CPU;
        else if (v && strcmp(v, "gpu") == 0) o->run.codecs = RUN_CODECS_GPU;
        else return cli_usage_error("--codecs must be auto, cpu or gpu");
    } else if (is_option(a, "--tiff-level")) {
        if (!(rc = parse_numeric_option("--tiff-level", option_value(argc, argv, i, "--tiff-level"), 1, 9, &n)))
            o->run.io.tiff_level = (int)n;
    } else if (is_option(a, "--tiff-compression")) {
        v = option_value(argc, argv, i, "--tiff-compression");
        if (!io_tiff_compression_from_name(v, &o->run.io.tiff_compression)) return cli_usage_error("--tiff-compression must be deflate, lzw, zstd or none");
    } else if (is_option(a, "--fail-on")) {
        v = option_value(argc, argv, i, "--fail-on");
        if (v && strcmp(v, "error") == 0) o->run.io.fail_on = IO_FAIL_ON_ERROR;
        else if (v && strcmp(v, "warning") == 0) o->run.io.fail_on = IO_FAIL_ON_WARNING;
        else return cli_usage_error("--fail-on must be error or warning");
    } else if (is_option(a, "--page")) {
        if (!(rc = parse_numeric_option("--page", option_value(argc, argv, i, "--page"), 0, 65534, &n))) {
            o->run.io.page = (uint32_t)n;
            o->page_given = 1;
        }
    } else if (is_option(a, "--max-pixels")) {
        if (!(rc = parse_numeric_option("--max-pixels", option_value(argc, argv, i, "--max-pixels"), 1, LONG_MAX, &n)))
            o->run.io.max_pixels = (uint64_t)n;
    } else if (is_option(a, "--max-ratio")) {
        if (!(rc = parse_numeric_option("--max-ratio", option_value(argc, argv, i, "--max-ratio"), 1, LONG_MAX, &n)))
            o->run.io.max_ratio = (uint64_t)n;
    } else if (is_option(a, "--max-jpeg-scans")) {
        v = option_value(argc, argv, i, "--max-jpeg-scans");
        if (!(rc = parse_numeric_option("--max-jpeg-scans", v, 1, INT_MAX, &n))) o->run.io.max_jpeg_scans = (int)n;
    } else if (is_option(a, "--max-tiff-blocks")) {
        v = option_value(argc, argv, i, "--max-tiff-blocks");
        if (!(rc = parse_numeric_option("--max-tiff-blocks", v, 1, LONG_MAX, &n))) o->run.io.max_tiff_blocks = (uint64_t)n;
    } else if (is_option(a, "--max-tiff-tile-bytes")) {
        v = option_value(argc, argv, i, "--max-tiff-tile-bytes");
        if (!(rc = parse_numeric_option("--max-tiff-tile-bytes", v, 1, LONG_MAX, &n))) o->run.io.max_tiff_tile_bytes = (uint64_t)n;
    } else if (is_option(a, "--memory") || is_option(a, "--gpu-memory") || is_option(a, "--bigtiff-above")) {
        const char *name = is_option(a, "--memory") ? "--memory" : is_option(a, "--gpu-memory") ? "--gpu-memory"
                                                                                                 : "--bigtiff-above";
        uint64_t bytes;
        v = option_value(argc, argv, i, name);
        if (!v || !stream_parse_size(v, &bytes) || bytes < 1)
            return cli_usage_error("%s expects a size such as 512M or 4G", name);
        if (name[2] == 'm') o->run.memory = bytes;
        else if (name[2] == 'g') o->run.gpu_memory = bytes;
        else o->run.io.tiff_bigtiff_above = bytes;
    } else if (is_option(a, "--stream")) {
        v = option_value(argc, argv, i, "--stream");
        if (v && strcmp(v, "auto") == 0) o->run.stream = RUN_STREAM_AUTO;
        else if (v && strcmp(v, "on") == 0) o->run.stream = RUN_STREAM_ON;
        else if (v && strcmp(v, "off") == 0) o->run.stream = RUN_STREAM_OFF;
        else return cli_usage_error("--stream must be auto, on or off");
    } else if (is_option(a, "--shape")) {
        v = option_value(argc, argv, i, "--shape");
        if (!v || !parse_shape(v, &o->check_shape))
            return cli_usage_error("--shape expects WxHxC with an optional :u8, :u16 or :f32, e.g. 512x512x1:u16");
    } else {
        return cli_usage_error("unknown option '%s'", a);
    }
    return rc;
}

int cli_parse_args(int argc, char **argv, cli_options *o)
{
    memset(o, 0, sizeof *o);
    run_default_options(&o->run);
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
            return cli_usage_error("too many arguments");
        }
    }
    o->run.io.threads = o->run.threads;
    /* --codecs cpu: every codec on the CPU, nvJPEG too, whatever --jpeg-decoder says, so the
     * whole run (single images, streams and folders) keeps --device cpu's bytes */
    if (o->run.codecs == RUN_CODECS_CPU) o->run.jpeg_gpu_required = 0;
    return CLI_OK;
}

