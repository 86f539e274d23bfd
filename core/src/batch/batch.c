#define _DEFAULT_SOURCE
#include "batch/batch.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "base/image.h"
#include "gpu/gpu.h"
#include "base/mono_clock.h"
#include "batch/sched.h"
#include "io/jpeg_ahead.h"
#include "run/run.h"

/* Files in one batch of the read-ahead decoder: nvImageCodec's measurements on the H100 went from
 * 2.7 ms a 12-MP file in batches of 25 to 0.96 ms in batches of 100. */
enum { AHEAD_BATCH = 64 };

typedef struct {
    batch_entry *items;
    int n, cap;
    int not_images;
    dev_t skip_dev;      /* the output folder, never listed as input (it may lie inside it) */
    ino_t skip_ino;
    int shard_index, shard_count;   /* --shard I/N: only the entries that hash to I */
    int all_pages;                  /* an entry for each page of a multi-page TIFF */
} entry_list;

/* Sums over the images a run decoded, for --profile. */
typedef struct {
    int images;
    double decode_ms, stages_ms, encode_ms, total_ms;
    double write_wait_ms;                /* waiting for the worker's last write behind */
    int firsts;                          /* the workers' first images, which make their buffers */
    double first_decode_ms, first_stages_ms, first_encode_ms;
    int behind;                          /* written behind the worker's next image */
} batch_times;

typedef struct {
    const batch_options *o;
    const plan *p;
    const batch_callbacks *cb;
    const batch_feed *feed;     /* NULL: the images of list */
    batch_listing *list;
    int next;
    batch_progress prog;
    double t0;
    pthread_mutex_t lock;
    jpeg_pool *jpeg;         /* nvJPEG shared by the workers of each GPU, when asked for */
    jpeg_ahead *ahead;       /* the listing's JPEGs read and decoded ahead of the workers, or NULL */
    const char **ahead_paths;
    int memory_early_at;     /* the image memory_early_at named, kept past the read-ahead's end */
    double free_mib_early, free_mib_last;   /* GPU memory free early on and at the last image taken */
    int jobs;
    batch_times times;       /* for --profile: where the workers' time went */
    sched sched;             /* which workers take the GPU, which the CPU (under lock) */
} batch_shared;

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", a, *a && *b ? "/" : "", b);
    return s;
}

int batch_is_batch_input(const char *input)
{
    struct stat st;
    return input[0] == '@' || (stat(input, &st) == 0 && S_ISDIR(st.st_mode));
}

/* FNV-1a of the path below the input: a shard depends on the name alone, not on the order the
 * files were listed in, so N copies started anywhere cover the folder exactly once. */
static int shard_of(const char *rel, int count)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *c = (const unsigned char *)rel; *c; c++) h = (h ^ *c) * 1099511628211ull;
    return (int)(h % (uint64_t)count);
}

static int list_add_page(entry_list *l, const char *path, const char *rel, const struct stat *st, io_format fmt,
                         uint32_t page, int paged)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        batch_entry *grown = realloc(l->items, (size_t)cap * sizeof *grown);
        if (!grown) return IP_ENOMEM;
        l->items = grown;
        l->cap = cap;
    }
    batch_entry *e = &l->items[l->n];
    memset(e, 0, sizeof *e);
    e->in = strdup(path);
    e->rel = strdup(rel);
    e->size = page == 0 ? (uint64_t)st->st_size : 0;
    e->fmt = fmt;
    e->page = page;
    e->paged = paged;
    if (!e->in || !e->rel) {
        free(e->in);
        free(e->rel);
        return IP_ENOMEM;
    }
    l->n++;
    return IP_OK;
}

static int list_add(entry_list *l, const char *path, const char *rel)
{
    if (l->shard_count > 1 && shard_of(rel, l->shard_count) != l->shard_index) return IP_OK;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return IP_OK;
    io_format fmt = io_detect_file(path);
    if (fmt == IO_FMT_UNKNOWN) {
        l->not_images++;
        return IP_OK;
    }
    /* A file whose pages cannot be counted is one entry: reading it says what is wrong. */
    uint32_t pages = 1;
    char err[256];
    if (l->all_pages && fmt == IO_FMT_TIFF && io_page_count(path, &pages, err, sizeof err) != IP_OK) pages = 1;
    int rc = IP_OK;
    for (uint32_t p = 0; p < pages && rc == IP_OK; p++) rc = list_add_page(l, path, rel, &st, fmt, p, pages > 1);
    return rc;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names of a folder (no dot files: they include our own temporaries). */
static int read_names(const char *dir, char ***names, int *n)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return IP_EIO;
    int cap = 0, rc = IP_OK;
    for (struct dirent *e; (e = readdir(d)) && rc == IP_OK;) {
        if (e->d_name[0] == '.') continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            char **grown = realloc(*names, (size_t)cap * sizeof *grown);
            if (!grown) { rc = IP_ENOMEM; break; }
            *names = grown;
        }
        if (!((*names)[*n] = strdup(e->d_name))) rc = IP_ENOMEM;
        else (*n)++;
    }
    closedir(d);
    if (*n > 1) qsort(*names, (size_t)*n, sizeof **names, cmp_name);
    return rc;
}

static int list_folder(entry_list *l, const char *dir, const char *rel, int recursive, int depth)
{
    char **names;
    int n, rc = read_names(dir, &names, &n);
    for (int i = 0; i < n; i++) {
        char *path = join(dir, names[i]), *sub = join(rel, names[i]);
        struct stat st;
        if (!path || !sub) rc = IP_ENOMEM;
        else if (rc == IP_OK && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            int is_output = st.st_dev == l->skip_dev && st.st_ino == l->skip_ino;
            if (recursive && depth < 64 && !is_output) rc = list_folder(l, path, sub, recursive, depth + 1);
        } else if (rc == IP_OK) {
            rc = list_add(l, path, sub);
        }
        free(path);
        free(sub);
        free(names[i]);
    }
    free(names);
    return rc;
}

static int list_file_of_paths(entry_list *l, const char *listfile, char *err, size_t errlen)
{
    FILE *f = fopen(listfile, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", listfile, strerror(errno));
        return IP_EIO;
    }
    char line[PATH_MAX + 2];
    int rc = IP_OK, lineno = 0;
    while (rc == IP_OK && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        struct stat st;
        if (stat(line, &st) != 0) {
            snprintf(err, errlen, "%s:%d: %s: %s", listfile, lineno, line, strerror(errno));
            rc = IP_EIO;
            break;
        }
        const char *base = strrchr(line, '/');
        rc = list_add(l, line, base ? base + 1 : line);
    }
    fclose(f);
    return rc;
}

static const char *format_ext(io_format f)
{
    return f == IO_FMT_PNG ? "png" : f == IO_FMT_JPEG ? "jpg" : "tif";
}

/* OUT_DIR/<rel without extension>.<ext>, or <...>-p<page>.<ext> for one of several pages */
static char *output_path(const batch_options *o, const batch_entry *e)
{
    const char *slash = strrchr(e->rel, '/');
    const char *dot = strrchr(slash ? slash : e->rel, '.');
    size_t stem = dot && dot != e->rel && dot[-1] != '/' ? (size_t)(dot - e->rel) : strlen(e->rel);
    const char *ext = format_ext(o->format != IO_FMT_UNKNOWN ? o->format : e->fmt);
    char page[16] = "";
    if (e->paged) snprintf(page, sizeof page, "-p%u", e->page);
    size_t n = strlen(o->output_dir) + stem + strlen(page) + strlen(ext) + 3;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s/%.*s%s.%s", o->output_dir, (int)stem, e->rel, page, ext);
    return out;
}

static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* Temporaries of an interrupted earlier run are removed from every folder we write into. */
static void remove_stale_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, ".imgpipe-tmp-", 13) != 0) continue;
        char *path = join(dir, e->d_name);
        if (path) unlink(path);
        free(path);
    }
    closedir(d);
}

static int prepare_outputs(const batch_options *o, entry_list *l, char *err, size_t errlen)
{
    if (make_dirs(o->output_dir) != 0) {
        snprintf(err, errlen, "%s: cannot create the output folder: %s", o->output_dir, strerror(errno));
        return IP_EIO;
    }
    remove_stale_temporaries(o->output_dir);
    for (int i = 0; i < l->n; i++) {
        batch_entry *e = &l->items[i];
        if (!(e->out = output_path(o, e))) return IP_ENOMEM;
        struct stat out_st, in_st;
        if (stat(e->out, &out_st) == 0) {
            for (int j = 0; j < l->n; j++)
                if (stat(l->items[j].in, &in_st) == 0 && in_st.st_ino == out_st.st_ino && in_st.st_dev == out_st.st_dev) {
                    snprintf(err, errlen, "%s: would overwrite the input %s: choose another output folder or --format",
                             e->out, l->items[j].in);
                    return IP_EINVAL;
                }
        }
        char *slash = strrchr(e->out, '/');
        if (slash && slash > e->out + strlen(o->output_dir)) {
            *slash = '\0';
            int bad = make_dirs(e->out);
            if (!bad) remove_stale_temporaries(e->out);
            *slash = '/';
            if (bad) {
                snprintf(err, errlen, "%s: cannot create folder: %s", e->out, strerror(errno));
                return IP_EIO;
            }
        }
    }
    return IP_OK;
}

static void free_list(entry_list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->items[i].in);
        free(l->items[i].rel);
        free(l->items[i].out);
    }
    free(l->items);
}

/* Each worker plans on its own copy of the steps: plan_shapes writes shapes into them, while
 * the plugins' states (read-only after create) are shared. */
typedef struct {
    batch_shared *sh;
    int index;
    plan own;
    int images;              /* decoded so far */
    run_worker *rw[2];       /* by role (sched_role): made the first time the worker takes it */
} worker;

/* The run layer's options for one image of the folder, run by a worker in role. */
static run_options image_options(const batch_options *o, const batch_entry *e, sched_role role)
{
    run_options ro;
    run_default_options(&ro);
    ro.device = role == SCHED_ROLE_GPU ? RUN_DEVICE_GPU : RUN_DEVICE_CPU;
    ro.threads = o->threads;
    ro.transfer = o->transfer;
    ro.profile = o->verbose;
    ro.no_fuse = o->no_fuse;
    ro.strip = o->strip;
    ro.jpeg_gpu_required = role == SCHED_ROLE_GPU && o->jpeg_on_gpu;
    ro.codecs = o->codecs;
    ro.stream = o->stream;
    ro.memory = o->memory;
    ro.io = o->io;
    if (o->all_pages && e) ro.io.page = e->page;
    return ro;
}

static void count_times(batch_shared *sh, const run_times *t, double total_ms, int first, int behind)
{
    pthread_mutex_lock(&sh->lock);
    sh->times.behind += behind;
    if (first) {
        sh->times.firsts++;
        sh->times.first_decode_ms += t->decode_ms;
        sh->times.first_stages_ms += t->stages_ms;
        sh->times.first_encode_ms += t->encode_ms;
    }
    sh->times.images++;
    sh->times.decode_ms += t->decode_ms;
    sh->times.stages_ms += t->stages_ms;
    sh->times.encode_ms += t->encode_ms;
    sh->times.write_wait_ms += t->write_wait_ms;
    sh->times.total_ms += total_ms;
    pthread_mutex_unlock(&sh->lock);
}

/* A file the read-ahead handed to a worker's CPU decoder: its place among the CPU's decodes is
 * given back when the decoding ends, not after the image's stages and encoding. */
typedef struct {
    jpeg_ahead *ahead;
    int told;
} cpu_decode;

static void cpu_decode_ended(void *user, int ok, double ms)
{
    cpu_decode *d = user;
    if (d->told) return;
    d->told = 1;
    jpeg_ahead_cpu_took(d->ahead, ok ? ms : -1.0);
}

typedef struct {
    sched_role role;
    int ticket;
} batch_ran;

static void report(batch_shared *sh, const batch_entry *e, int rc, int resumed, const char *msg,
                   const io_warnings *warnings, const batch_ran *ran);

/* An image whose file the worker's writer finishes behind its next image: counted and reported
 * by whichever ends last, the write (on the writer's thread) or the worker's return from the run. */
typedef struct {
    batch_shared *sh;
    const batch_entry *e;
    batch_ran ran;
    double t0;
    atomic_int parts_left;       /* 2: the write, and the run's own results */
    io_warnings warnings;        /* the run's */
    run_times times;
    int first;
    int write_rc;                /* the write's */
    double encode_ms;
    char err[1024];
} written_later;

static void later_part_done(written_later *later)
{
    if (atomic_fetch_sub(&later->parts_left, 1) != 1) return;
    later->times.encode_ms = later->encode_ms;
    count_times(later->sh, &later->times, (now_s() - later->t0) * 1e3, later->first, 1);
    report(later->sh, later->e, later->write_rc, 0, later->err, &later->warnings, &later->ran);
    free(later);
}

static void image_written(void *user, int rc, double encode_ms, const char *err)
{
    written_later *later = user;
    later->encode_ms = encode_ms;
    later->write_rc = rc;
    snprintf(later->err, sizeof later->err, "%s", err);
    later_part_done(later);
}

static written_later *later_for(worker *w, sched_role role, const batch_entry *e, const batch_ran *ran, double t0)
{
    if (role != SCHED_ROLE_GPU || w->sh->feed) return NULL;
    written_later *later = calloc(1, sizeof *later);
    if (!later) return NULL;
    later->sh = w->sh, later->e = e, later->ran = *ran, later->t0 = t0;
    atomic_init(&later->parts_left, 2);
    return later;
}

/* Runs e and reports it: now, or when the worker's writer has written it behind. */
static void process_entry(worker *w, sched_role role, const batch_entry *e, const batch_ran *ran, char *err,
                          size_t errlen)
{
    run_worker *rw = w->rw[role];
    run_options ro = image_options(w->sh->o, e, role);
    cpu_decode on_cpu = { w->sh->ahead, 0 };
    run_source in = { e->in, NULL, NULL, 0, NULL, NULL };
    double t0 = now_s();
    /* the file written behind the next image's decoding, where a GPU worker's result stays on the card */
    written_later *later = later_for(w, role, e, ran, t0);
    run_sink out = { e->out, NULL, 0, later ? image_written : NULL, later };
    run_result res;
    int ahead_index = w->sh->ahead && role == SCHED_ROLE_GPU ? (int)(e - w->sh->list->items) : -1;
    ip_image decoded;
    jpeg_ahead_got got = ahead_index >= 0 ? jpeg_ahead_take(w->sh->ahead, ahead_index, &decoded) : JPEG_AHEAD_USUAL;
    if (got == JPEG_AHEAD_TAKEN) in.decoded = &decoded;
    if (got == JPEG_AHEAD_ON_CPU) {
        in.jpeg_on_cpu = 1;
        in.on_decoded = cpu_decode_ended;
        in.on_decoded_user = &on_cpu;
    }
    double take_ms = (now_s() - t0) * 1e3;
    int rc = run_image(rw, &w->own, &in, &out, &ro, &res, err, errlen);
    if (in.jpeg_on_cpu) cpu_decode_ended(&on_cpu, res.decoded, res.times.decode_ms);
    if (in.decoded) {   /* the stages read it on the worker's stream (exec_run waited for them before a write behind) */
        if (!res.write_behind) gpu_stream_sync(run_worker_stream(rw), NULL, 0);
        res.times.decode_ms += take_ms;
    }
    if (ahead_index >= 0) jpeg_ahead_release(w->sh->ahead, ahead_index);
    if (res.notes[0] && w->sh->cb->note) {
        pthread_mutex_lock(&w->sh->lock);
        w->sh->cb->note(w->sh->cb->user, res.notes);
        pthread_mutex_unlock(&w->sh->lock);
    }
    int first = res.decoded && w->images++ == 0;
    if (res.write_behind) {
        later->warnings = res.warnings, later->times = res.times, later->first = first;
        later_part_done(later);
        return;
    }
    free(later);
    if (res.decoded) count_times(w->sh, &res.times, (now_s() - t0) * 1e3, first, 0);
    report(w->sh, e, rc, 0, err, &res.warnings, ran);
}

/* The image by which every worker's buffers, and the read-ahead's, are made. */
static int memory_early_at(const batch_shared *sh)
{
    int at = 2 * sh->jobs + 8 + jpeg_ahead_slots(sh->ahead);
    return at < sh->list->n ? at : 0;
}

/* For --profile: device memory free when image memory_early_at is taken and when the last is
 * (every worker still holds its own), so growth over a run shows. */
static void watch_memory(batch_shared *sh, int taken)
{
    size_t free_bytes, total;
    int early_at = sh->memory_early_at;
    int early = taken == early_at, last = taken == sh->list->n - 1;
    if ((!early && !last) || gpu_memory_info(&free_bytes, &total, NULL, 0) != IP_OK) return;
    if (early) sh->free_mib_early = (double)free_bytes / 1048576.0;
    if (last) sh->free_mib_last = (double)free_bytes / 1048576.0;
}

/* The file a worker will take a round of images later is asked into the page cache now, so its
 * reading never waits on the disk. */
static void read_ahead(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    close(fd);
}

/* The next image for worker w in role, or NULL when none is left; *stale when the worker's role
 * changed since it asked (it asks again, making its context for the new role first). */
static const batch_entry *take_next(batch_shared *sh, int w, sched_role role, int *ticket, int *stale)
{
    *stale = 0;
    if (sh->feed) return sh->feed->take(sh->feed->user);
    pthread_mutex_lock(&sh->lock);
    const batch_entry *e = NULL, *ahead = NULL;
    if (sched_role_of(&sh->sched, w) != role) *stale = 1;
    else if (sh->o->stop && *sh->o->stop) sh->prog.stopped = 1;
    else if (sh->next < sh->list->n) e = &sh->list->items[sh->next++];
    if (e) *ticket = sched_taken(&sh->sched);
    if (e && sh->next - 1 + sh->jobs < sh->list->n) ahead = &sh->list->items[sh->next - 1 + sh->jobs];
    if (e && sh->o->verbose && sh->o->device == EXEC_GPU) watch_memory(sh, sh->next - 1);
    pthread_mutex_unlock(&sh->lock);
    if (ahead) read_ahead(ahead->in);
    return e;
}

/* The arrangement's line, when auto chose it (with the lock held). */
static void say_arrangement(batch_shared *sh, const char *extra)
{
    char line[1280], what[512];
    if (!sh->cb->note) return;
    sched_describe(&sh->sched, what, sizeof what);
    snprintf(line, sizeof line, "device: %s%s%s%s", what, extra ? " (" : "", extra ? extra : "", extra ? ")" : "");
    sh->cb->note(sh->cb->user, line);
}

/* A finished image, of a worker in role: progress, failures, and the arrangement's measuring. */
static void report(batch_shared *sh, const batch_entry *e, int rc, int resumed, const char *msg,
                   const io_warnings *warnings, const batch_ran *ran)
{
    if (sh->feed) {
        sh->feed->finished(sh->feed->user, e, rc, resumed, rc == IP_OK ? NULL : msg);
        return;
    }
    pthread_mutex_lock(&sh->lock);
    if (resumed) sh->prog.resumed++;
    else if (rc == IP_OK) sh->prog.done++;
    else sh->prog.failed++;
    if (!resumed && ran) {
        if (ran->role == SCHED_ROLE_GPU) sh->prog.on_gpu++;
        else sh->prog.on_cpu++;
        if (sched_finished(&sh->sched, ran->role, ran->ticket, now_s())) say_arrangement(sh, sh->o->arrangement_why);
    }
    char page_label[PATH_MAX + 32];   /* one page of several is named with its page */
    const char *label = e->in;
    if (e->paged && snprintf(page_label, sizeof page_label, "%s (page %u)", e->in, e->page) < (int)sizeof page_label)
        label = page_label;
    if (rc == IP_OK && warnings && warnings->count) {   /* a failure says why in one line of its own */
        sh->prog.warned++;
        if (sh->cb->warning) sh->cb->warning(sh->cb->user, label, warnings);
    }
    if (!resumed) sh->prog.bytes_in += e->size;
    sh->prog.elapsed_s = now_s() - sh->t0;
    if (rc != IP_OK && sh->cb->failure) sh->cb->failure(sh->cb->user, label, msg);
    sh->prog.last = label;
    if (sh->cb->progress) sh->cb->progress(sh->cb->user, &sh->prog);
    sh->prog.last = NULL;
    pthread_mutex_unlock(&sh->lock);
}

static sched_role role_now(batch_shared *sh, int w)
{
    pthread_mutex_lock(&sh->lock);
    sched_role role = sched_role_of(&sh->sched, w);
    pthread_mutex_unlock(&sh->lock);
    return role;
}

/* The device of the worker or GPU numbered i (workers go round the GPUs). */
static int gpu_of(const batch_options *o, int i) { return o->n_gpus > 0 ? o->gpu_ids[i % o->n_gpus] : 0; }

/* The GPU failed to start (err): the CPU workers take every image, said once. Lock held. */
static void gpu_lost(batch_shared *sh, const char *err)
{
    if (!sched_gpu_failed(&sh->sched) || !sh->cb->note) return;
    char msg[1280];
    snprintf(msg, sizeof msg, "the GPU cannot be used (%s): the CPU workers take every image", err);
    sh->cb->note(sh->cb->user, msg);
}

/* The worker's run worker for role, made on first need. A GPU whose context cannot be made hands
 * every image to the CPU workers where they may take them (else each image fails with why).
 * Returns 0 when that changed the worker's role (it asks for its role again). */
static int worker_ready(worker *w, sched_role role, char *err, size_t errlen)
{
    batch_shared *sh = w->sh;
    const batch_options *o = sh->o;
    if (w->rw[role]) return 1;
    run_options ro = image_options(o, NULL, role);
    int gpu = role == SCHED_ROLE_GPU;
    run_worker_options wo = { gpu ? EXEC_GPU : EXEC_CPU, gpu_of(o, w->index), gpu ? sh->jpeg : NULL, o->cpu_fallback, 1 };
    if (run_worker_create(&w->rw[role], &ro, &wo, err, errlen) != IP_OK) return 1;   /* its images say so */
    /* where CPU workers may take this run's images, a GPU that fails gives them all */
    if (!gpu || !sh->sched.o.cpu_while_starting || run_worker_ready(w->rw[role], err, errlen) == IP_OK) return 1;
    run_worker_destroy(w->rw[role]);
    w->rw[role] = NULL;
    pthread_mutex_lock(&sh->lock);
    gpu_lost(sh, err);
    pthread_mutex_unlock(&sh->lock);
    return 0;
}

static void pass_notes(batch_shared *sh, run_worker *rw)
{
    const char *notes = run_worker_notes(rw);
    if (!notes[0] || !sh->cb->note) return;
    pthread_mutex_lock(&sh->lock);
    sh->cb->note(sh->cb->user, notes);
    pthread_mutex_unlock(&sh->lock);
}

/* An image read ahead that its worker will not run: its decoded copy goes back. */
static void drop_ahead(batch_shared *sh, const batch_entry *e)
{
    if (!sh->ahead) return;
    ip_image unused;
    int index = (int)(e - sh->list->items);
    if (jpeg_ahead_take(sh->ahead, index, &unused) == JPEG_AHEAD_ON_CPU) jpeg_ahead_cpu_took(sh->ahead, -1.0);
    jpeg_ahead_release(sh->ahead, index);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    batch_shared *sh = w->sh;
    const batch_options *o = sh->o;
    char err[1024];
    for (;;) {
        sched_role role = role_now(sh, w->index);
        if (!worker_ready(w, role, err, sizeof err)) continue;
        batch_ran ran = { role, 0 };
        int stale;
        const batch_entry *e = take_next(sh, w->index, role, &ran.ticket, &stale);
        if (stale) continue;
        if (!e) break;
        struct stat st;
        if (o->resume && stat(e->out, &st) == 0) {
            report(sh, e, IP_OK, 1, NULL, NULL, NULL);
            continue;
        }
        if (w->rw[role]) {
            process_entry(w, role, e, &ran, err, sizeof err);
        } else {
            drop_ahead(sh, e);
            report(sh, e, IP_ENOMEM, 0, "out of memory", NULL, &ran);
        }
        pass_notes(sh, w->rw[role]);
    }
    run_worker_destroy(w->rw[SCHED_ROLE_CPU]);
    run_worker_destroy(w->rw[SCHED_ROLE_GPU]);
    return NULL;
}

static int run_workers(batch_shared *sh, int jobs, char *err, size_t errlen)
{
    worker *ws = calloc((size_t)jobs, sizeof *ws);
    pthread_t *tids = calloc((size_t)jobs, sizeof *tids);
    int started = 0, rc = IP_OK;
    if (!ws || !tids) rc = IP_ENOMEM;
    for (int i = 0; rc == IP_OK && i < jobs; i++) {
        ws[i].sh = sh;
        ws[i].index = i;
        if (plan_share(sh->p, &ws[i].own) != IP_OK) { rc = IP_ENOMEM; break; }
        if (pthread_create(&tids[i], NULL, worker_main, &ws[i]) != 0) {
            plan_unshare(&ws[i].own);
            rc = IP_EINVAL;
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(tids[i], NULL);
        plan_unshare(&ws[i].own);
    }
    if (rc != IP_OK && started == 0) snprintf(err, errlen, "cannot start worker threads");
    free(ws);
    free(tids);
    return started ? IP_OK : rc;
}

/* Makes the output folder first, so that a folder inside the input can be left out of the listing. */
static int output_folder_identity(const batch_options *o, entry_list *l, char *err, size_t errlen)
{
    struct stat st;
    if (make_dirs(o->output_dir) != 0 || stat(o->output_dir, &st) != 0) {
        snprintf(err, errlen, "%s: cannot create the output folder: %s", o->output_dir, strerror(errno));
        return IP_EIO;
    }
    l->skip_dev = st.st_dev;
    l->skip_ino = st.st_ino;
    return IP_OK;
}

/* Whether the read-ahead may take the folder's JPEGs: one GPU whose workers take every image in
 * the listing's order (IMGPIPE_JPEG_AHEAD=off: never). Not under --resume (an image skipped for
 * its output would hold its decoded copy to the end) nor --page (which a JPEG has not: the reader
 * says so). */
static int ahead_possible(const batch_options *o, const batch_listing *l, int jobs)
{
    const char *env = getenv("IMGPIPE_JPEG_AHEAD");
    int mixed = o->gpu_workers > 0 && o->gpu_workers < jobs;
    return l && o->device == EXEC_GPU && o->n_gpus <= 1 && !mixed && !o->arrange_by_rates &&
           o->transfer != EXEC_ZEROCOPY && o->stream != RUN_STREAM_ON && !o->resume && o->io.page == 0 &&
           !(env && !strcmp(env, "off"));
}

/* nvJPEG starts opening on every GPU now, beside the workers' start-up, when any image is a JPEG
 * or the outputs are; without it, JPEG simply goes through libjpeg-turbo. Under the read-ahead,
 * which decodes on states of its own, the pool's decoder state is made at its first decode, if
 * any: made with the handle, it held the read-ahead's start back by 0.1-0.25 s. */
static void open_jpeg_pool(batch_shared *sh, const batch_listing *l, int jobs)
{
    const batch_options *o = sh->o;
    int any_jpeg = o->format == IO_FMT_JPEG || !l;   /* fed images (MPI) are not known in advance */
    for (int i = 0; l && i < l->n && !any_jpeg; i++)
        any_jpeg = l->items[i].fmt == IO_FMT_JPEG || io_format_from_ext(l->items[i].out) == IO_FMT_JPEG;
    if (!any_jpeg || !jpeg_gpu_built()) return;
    int zero = 0, n = o->n_gpus > 0 ? o->n_gpus : 1;
    const int *devices = o->n_gpus > 0 ? o->gpu_ids : &zero;
    char err[256];
    unsigned uses = ahead_possible(o, l, jobs) ? 0 : JPEG_GPU_DECODE;
    if (jpeg_pool_open(&sh->jpeg, n, devices, uses, jobs, err, sizeof err) != IP_OK) sh->jpeg = NULL;
}

static void close_jpeg_pool(batch_shared *sh)
{
    if (!sh->jpeg) return;
    jpeg_pool_stats t = jpeg_pool_totals(sh->jpeg);
    if (sh->cb->note && sh->o->verbose) {
        char msg[512];
        snprintf(msg, sizeof msg, "nvJPEG: %ld files decoded on the GPU in %ld batches (mean %.1f, largest %d, "
                 "%.1f ms decoding, of which the engine %.1f ms and %ld batch-size initialisations %.1f ms), handle "
                 "opened in %.0f ms; workers waited %.1f ms a file for the shared decoder",
                 t.files, t.batches, t.batches ? (double)t.files / (double)t.batches : 0.0, t.largest_batch,
                 t.decode_ms, t.engine_ms, t.inits, t.init_ms, t.open_ms, t.files ? t.wait_ms / (double)t.files : 0.0);
        sh->cb->note(sh->cb->user, msg);
    }
    jpeg_pool_close(sh->jpeg);
    sh->jpeg = NULL;
}

/* Where ahead_possible: the JPEGs are read and decoded ahead in large batches, the workers
 * decoding on the CPU what the engine would keep them waiting for (IMGPIPE_JPEG_AHEAD=engine turns
 * the CPU's help off, and IMGPIPE_JPEG_AHEAD_PARSE=whole has its readers parse whole files, to
 * compare). */
static void start_ahead(batch_shared *sh, const batch_listing *l, int jobs)
{
    const batch_options *o = sh->o;
    const char *env = getenv("IMGPIPE_JPEG_AHEAD"), *parse = getenv("IMGPIPE_JPEG_AHEAD_PARSE");
    if (!sh->jpeg || !ahead_possible(o, l, jobs)) return;
    if (!(sh->ahead_paths = calloc((size_t)l->n, sizeof *sh->ahead_paths))) return;
    int any = 0;
    for (int i = 0; i < l->n; i++) {
        const batch_entry *e = &l->items[i];
        if (e->fmt != IO_FMT_JPEG || e->page != 0) continue;
        sh->ahead_paths[i] = e->in;
        any = 1;
    }
    char err[256];
    jpeg_ahead_limits lim = { AHEAD_BATCH, jobs, o->memory ? o->memory : run_default_memory(),
                              !(env && !strcmp(env, "engine")), parse && !strcmp(parse, "whole") };
    if (!any || jpeg_ahead_start(&sh->ahead, sh->jpeg, gpu_of(o, 0), l->n, sh->ahead_paths, &o->io, &lim, err,
                                 sizeof err) != IP_OK) {
        free(sh->ahead_paths);
        sh->ahead_paths = NULL;
    }
}

static void stop_ahead(batch_shared *sh)
{
    if (!sh->ahead) return;
    jpeg_ahead_stats t = jpeg_ahead_totals(sh->ahead);
    jpeg_ahead_stop(sh->ahead);
    sh->ahead = NULL;
    free(sh->ahead_paths);
    sh->ahead_paths = NULL;
    if (!sh->cb->note || !sh->o->verbose) return;
    char msg[768];
    long taken = t.files + t.not_ahead + t.cpu_files;
    snprintf(msg, sizeof msg, "nvJPEG read-ahead: %ld files decoded in %ld engine batches (mean %.1f, largest %d; "
             "%.1f ms, %.2f ms a file; reading and checking %.2f ms a file on %d threads), %ld by the workers' CPU "
             "while the engine was busy or opening (%.1f ms a file); %ld files left to the workers; workers waited "
             "%.1f ms an image", t.files, t.batches, t.batches ? (double)t.files / (double)t.batches : 0.0,
             t.largest_batch, t.engine_ms, t.files ? t.engine_ms / (double)t.files : 0.0, t.files + t.not_ahead ?
             t.read_ms / (double)(t.files + t.not_ahead) : 0.0, JPEG_AHEAD_READERS, t.cpu_files,
             t.cpu_files ? t.cpu_ms / (double)t.cpu_files : 0.0, t.not_ahead,
             taken ? t.take_wait_ms / (double)taken : 0.0);
    sh->cb->note(sh->cb->user, msg);
    snprintf(msg, sizeof msg, "nvJPEG read-ahead's start and end, ms from its start: handle at %.0f, engine open at "
             "%.0f, ready at %.0f; the first batch's %d files read by %.0f (%.0f ms summed, of which %.0f their device "
             "memory and header); first batch from %.0f for %.0f ms; last batch ended at %.0f", t.engine_handle_at,
             t.engine_open_at, t.engine_ready_at, AHEAD_BATCH, t.first_prepared_at, t.first_read_ms,
             t.first_prepare_ms, t.first_batch_at, t.first_batch_ms, t.last_batch_end_at);
    sh->cb->note(sh->cb->user, msg);
}

/* Which workers take the GPU: every one under --device gpu (or cpu: none); in the mixed
 * arrangement the number asked, in proportion when the folder has fewer images than workers. */
static void plan_arrangement(batch_shared *sh, int jobs, int n_images)
{
    const batch_options *o = sh->o;
    int asked = o->jobs > 0 ? o->jobs : 1, gpu = jobs;
    if (o->device != EXEC_GPU) gpu = 0;
    else if (o->gpu_workers > 0 && o->gpu_workers < asked) gpu = (int)((long)o->gpu_workers * jobs / asked);
    if (o->device == EXEC_GPU && gpu < 1) gpu = 1;
    int cpu_may_take = o->device == EXEC_GPU && o->gpu_workers > 0 && o->gpu_workers < asked;
    sched_options so = { jobs, gpu, o->arrange_by_rates, cpu_may_take, n_images };
    sched_init(&sh->sched, &so, now_s());
}

/* The mixed arrangement's start-up: every GPU's context (and nvJPEG's handle) made on a thread
 * while the workers run the first images on the CPU; then the GPU workers take theirs. */
static void *start_gpus(void *arg)
{
    batch_shared *sh = arg;
    const batch_options *o = sh->o;
    char err[512];
    int rc = IP_OK;
    for (int g = 0; rc == IP_OK && g < (o->n_gpus > 0 ? o->n_gpus : 1); g++) {
        rc = gpu_start(gpu_of(o, g), err, sizeof err);
        if (rc == IP_OK && sh->jpeg) jpeg_pool_handle(sh->jpeg, gpu_of(o, g), NULL);
    }
    pthread_mutex_lock(&sh->lock);
    if (rc == IP_OK) sched_gpu_ready(&sh->sched, now_s());
    else gpu_lost(sh, err);
    pthread_mutex_unlock(&sh->lock);
    return NULL;
}

/* Runs the workers, with the GPU starting beside them when the arrangement lets them start on the
 * CPU. */
static int run_arranged(batch_shared *sh, int jobs, char *err, size_t errlen)
{
    pthread_t starter;
    /* read before the starter runs: it changes the phase under the lock */
    int wants_start = sh->sched.phase == SCHED_STARTING;
    int starting = wants_start && pthread_create(&starter, NULL, start_gpus, sh) == 0;
    if (wants_start && !starting) sched_gpu_ready(&sh->sched, now_s());
    int rc = run_workers(sh, jobs, err, errlen);
    if (starting) pthread_join(starter, NULL);
    return rc;
}

/* Folder workers wait for their GPU asleep, leaving the cores to the others' codecs; nvJPEG opens
 * beside their start-up when asked for. */
static void prepare_gpus(batch_shared *sh, const batch_listing *l, int jobs)
{
    const batch_options *o = sh->o;
    if (o->device != EXEC_GPU) return;
    for (int g = 0; g < (o->n_gpus > 0 ? o->n_gpus : 1); g++) gpu_prefer_blocking_sync(gpu_of(o, g));
    if (o->jpeg_on_gpu) open_jpeg_pool(sh, l, jobs);
}

int batch_list(const batch_options *o, batch_listing *out, char *err, size_t errlen)
{
    entry_list list = { 0 };
    list.shard_index = o->shard_index;
    list.shard_count = o->shard_count;
    list.all_pages = o->all_pages;
    memset(out, 0, sizeof *out);
    int rc;
    if (o->input[0] == '@') {
        rc = list_file_of_paths(&list, o->input + 1, err, errlen);
    } else {
        rc = output_folder_identity(o, &list, err, errlen);
        if (rc == IP_OK && (rc = list_folder(&list, o->input, "", o->recursive, 0)) != IP_OK)
            snprintf(err, errlen, "%s: cannot read the folder", o->input);
    }
    if (rc == IP_OK) rc = prepare_outputs(o, &list, err, errlen);
    if (rc == IP_ENOMEM) snprintf(err, errlen, "out of memory listing the input");
    if (rc != IP_OK) {
        free_list(&list);
        return rc;
    }
    out->items = list.items;
    out->n = list.n;
    out->not_images = list.not_images;
    return IP_OK;
}

void batch_listing_free(batch_listing *l)
{
    entry_list list = { 0 };
    list.items = l->items;
    list.n = l->n;
    free_list(&list);
    memset(l, 0, sizeof *l);
}

int batch_run_fed(const batch_options *o, const plan *p, const batch_feed *feed, const batch_callbacks *cb,
                  char *err, size_t errlen)
{
    batch_shared sh = { .o = o, .p = p, .cb = cb, .feed = feed, .t0 = now_s(), .lock = PTHREAD_MUTEX_INITIALIZER,
                        .free_mib_early = -1, .free_mib_last = -1, .jobs = o->jobs > 0 ? o->jobs : 1 };
    plan_arrangement(&sh, sh.jobs, 0);
    prepare_gpus(&sh, NULL, sh.jobs);
    int rc = run_arranged(&sh, sh.jobs, err, errlen);
    close_jpeg_pool(&sh);
    return rc;
}

/* For --profile: where each image's time went in the workers, on average. */
static void note_times(const batch_shared *sh)
{
    const batch_times *t = &sh->times;
    if (!sh->cb->note || !sh->o->verbose || !t->images) return;
    char msg[768];
    double n = t->images;
    snprintf(msg, sizeof msg, "workers: %d images (%d by GPU workers, %d by CPU workers), a mean %.1f ms each in a "
             "worker (%d in flight): decode %.1f ms, stages %.1f ms, encode and write %.1f ms (%d written behind the "
             "next image's decoding), other %.1f ms (of which waiting for the last write %.1f ms); a worker's first "
             "image: decode %.1f ms, stages %.1f ms, encode and write %.1f ms",
             t->images, sh->prog.on_gpu, sh->prog.on_cpu, t->total_ms / n, sh->jobs, t->decode_ms / n,
             t->stages_ms / n, t->encode_ms / n, t->behind, (t->total_ms - t->decode_ms - t->stages_ms - t->encode_ms) / n,
             t->write_wait_ms / n,
             t->firsts ? t->first_decode_ms / t->firsts : 0.0, t->firsts ? t->first_stages_ms / t->firsts : 0.0,
             t->firsts ? t->first_encode_ms / t->firsts : 0.0);
    sh->cb->note(sh->cb->user, msg);
}

int batch_run(const batch_options *o, const plan *p, const batch_callbacks *cb, batch_progress *result,
              char *err, size_t errlen)
{
    batch_listing list;
    memset(result, 0, sizeof *result);
    int rc = batch_list(o, &list, err, errlen);
    if (rc != IP_OK) return rc;
    batch_shared sh = { .o = o, .p = p, .cb = cb, .list = &list, .t0 = now_s(), .lock = PTHREAD_MUTEX_INITIALIZER,
                        .free_mib_early = -1, .free_mib_last = -1 };
    sh.prog.total = list.n;
    sh.prog.not_images = list.not_images;
    int jobs = o->jobs > 0 ? o->jobs : 1;
    if (jobs > list.n) jobs = list.n > 0 ? list.n : 1;
    sh.jobs = jobs;
    plan_arrangement(&sh, jobs, list.n);
    if (list.n) prepare_gpus(&sh, &list, jobs);
    if (list.n && o->arrange_by_rates && !sh.sched.o.measure) {
        char why[512];
        snprintf(why, sizeof why, "%s%s%d image%s: too few to measure the arrangements", o->arrangement_why ?
                 o->arrangement_why : "", o->arrangement_why ? "; " : "", list.n, list.n == 1 ? "" : "s");
        say_arrangement(&sh, why);
    }
    if (list.n) start_ahead(&sh, &list, jobs);
    sh.memory_early_at = memory_early_at(&sh);
    rc = list.n ? run_arranged(&sh, jobs, err, errlen) : IP_OK;
    sh.prog.elapsed_s = now_s() - sh.t0;
    note_times(&sh);
    stop_ahead(&sh);
    close_jpeg_pool(&sh);
    if (sh.free_mib_early >= 0 && sh.free_mib_last >= 0 && cb->note) {
        char msg[160];
        int early_at = sh.memory_early_at;
        snprintf(msg, sizeof msg, "GPU memory in use grew by %.1f MiB from image %d to the last", sh.free_mib_early -
                 sh.free_mib_last, early_at + 1);
        cb->note(cb->user, msg);
    }
    *result = sh.prog;
    batch_listing_free(&list);
    return rc;
}
