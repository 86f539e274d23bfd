/* The GPU PNG writer's host half (png_gpu_join.h), with zlib's raw deflate standing in for
 * nvCOMP: every band deflated on its own to a final block (Z_FINISH), some padded after it as a
 * compressor may leave them. Joined bands behind a zlib header and the adler32 must inflate
 * (zlib, which checks the adler32) to exactly the concatenated bands: random and photo-like
 * data, 1-byte bands, one band, many bands, empty bands, stored (level 0), fixed-Huffman and
 * Huffman-only bands, mixed levels. Whole files from CPU-filtered rows (bands cut mid-row) decode
 * equal by libpng (io_read), Pillow and OpenCV, begin exactly as the CPU writer's files do, and a
 * damaged band is an error leaving no file. The join from walks made apart (the device's) gives
 * the walking join's bytes, and refuses a walk marked invalid or past its band. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "io/io.h"
#include "io/meta.h"
#include "io/png_gpu_join.h"
#include "png_testutil.h"
#include "testutil.h"

#define PAD_BYTES 3   /* zeros after some bands' streams, as a compressor may pad them */

typedef struct {
    int level, strategy;
} deflate_kind;

/* The band deflated alone by zlib into a buffer with the join's spare room (and padding). */
static void deflate_band(const unsigned char *in, size_t len, deflate_kind k, int pad, pngx_band *out)
{
    z_stream z = { 0 };
    if (deflateInit2(&z, k.level, Z_DEFLATED, -15, 8, k.strategy) != Z_OK) exit(2);
    size_t cap = deflateBound(&z, (uLong)len) + PNG_GPU_JOIN_SPARE + PAD_BYTES + 16;
    out->data = malloc(cap);
    if (!out->data) exit(2);
    z.next_in = (Bytef *)in, z.avail_in = (uInt)len;
    z.next_out = out->data, z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    CHECK(rc == Z_STREAM_END, "zlib deflate: %d", rc);
    out->len = cap - z.avail_out;
    deflateEnd(&z);
    if (pad) memset(out->data + out->len, 0, PAD_BYTES), out->len += PAD_BYTES;
    out->adler = adler32_z(adler32(0L, Z_NULL, 0), in, len);
    out->filtered_len = len;
}

/* Cuts data at the given band lengths (the last takes the rest) and deflates each. */
static pngx_band *make_bands(const unsigned char *data, const size_t *lens, size_t n, const deflate_kind *kinds,
                             size_t n_kinds)
{
    pngx_band *b = calloc(n, sizeof *b);
    if (!b) exit(2);
    for (size_t k = 0, at = 0; k < n; at += lens[k], k++) deflate_band(data + at, lens[k], kinds[k % n_kinds], k % 3 == 1, &b[k]);
    return b;
}

static void free_bands(pngx_band *b, size_t n)
{
    for (size_t k = 0; k < n; k++) free(b[k].data);
    free(b);
}

static int inflate_zlib(const unsigned char *z, size_t zlen, unsigned char *out, size_t cap, size_t *got)
{
    z_stream s = { 0 };
    if (inflateInit(&s) != Z_OK) return -1;
    s.next_in = (Bytef *)z, s.avail_in = (uInt)zlen;
    s.next_out = out, s.avail_out = (uInt)cap;
    int rc = inflate(&s, Z_FINISH);
    *got = cap - s.avail_out;
    inflateEnd(&s);
    return rc == Z_STREAM_END && s.avail_in == 0 ? 0 : -1;
}

/* The join from walks made apart (as the device makes them) gives the same bytes as the join
 * that walks (done, in joined). */
static void check_walked_join(const char *what, const pngx_band *joined, pngx_band *b, size_t n)
{
    deflate_walk_result *walks = calloc(n ? n : 1, sizeof *walks);
    for (size_t k = 0; k < n; k++)
        CHECK(deflate_walk_prefix(b[k].data, b[k].len, &walks[k]) == 0, "%s: band %zu does not walk", what, k);
    size_t bad = (size_t)-1;
    int rc = png_gpu_join_walked(b, n, walks, &bad);
    CHECK(rc == IP_OK, "%s: the walked join failed at band %zu", what, bad);
    size_t first = n;
    for (size_t k = 0; !rc && k < n && first == n; k++)
        if (b[k].len != joined[k].len || memcmp(b[k].data, joined[k].data, b[k].len)) first = k;
    CHECK(rc || first == n, "%s: the walked join differs from the walking one at band %zu", what, first);
    free(walks);
}

/* Joins the bands, puts a zlib header and the whole data's adler32 (computed here, in one go)
 * around them, and inflates. */
static void check_join(const char *what, const unsigned char *data, size_t total, const size_t *lens, size_t n,
                       const deflate_kind *kinds, size_t n_kinds, int threads)
{
    pngx_band *b = make_bands(data, lens, n, kinds, n_kinds);
    pngx_band *walked = make_bands(data, lens, n, kinds, n_kinds);
    size_t bad = (size_t)-1;
    int rc = png_gpu_join_bands(b, n, threads, &bad);
    CHECK(rc == IP_OK, "%s: join failed at band %zu", what, bad);
    check_walked_join(what, b, walked, n);
    free_bands(walked, n);
    size_t zlen = 2 + 4;
    for (size_t k = 0; k < n; k++) zlen += b[k].len;
    unsigned char *z = malloc(zlen), *back = malloc(total + 64);
    z[0] = 0x78, z[1] = 0x01;
    size_t at = 2;
    for (size_t k = 0; k < n; k++) memcpy(z + at, b[k].data, b[k].len), at += b[k].len;
    uLong adler = adler32_z(adler32(0L, Z_NULL, 0), data, total);
    z[at] = (unsigned char)(adler >> 24), z[at + 1] = (unsigned char)(adler >> 16);
    z[at + 2] = (unsigned char)(adler >> 8), z[at + 3] = (unsigned char)adler;
    size_t got = 0;
    int ok = !rc && inflate_zlib(z, zlen, back, total + 64, &got) == 0 && got == total && !memcmp(back, data, total);
    CHECK(ok, "%s: %zu bands, joined stream inflates to %zu of %zu bytes", what, n, got, total);
    free(z);
    free(back);
    free_bands(b, n);
}

static unsigned char *random_bytes(size_t n, tu_rng *r)
{
    unsigned char *p = malloc(n + 1);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)tu_next(r);
    return p;
}

static void join_cases(void)
{
    tu_rng r;
    tu_seed(&r, 29);
    ip_image photo = ptu_photo(300, 220, 3, IP_U8, 5, 7);
    size_t photo_len;
    unsigned char *photo_rows = ptu_filtered(&photo, &photo_len), *noise = random_bytes(photo_len, &r);
    const deflate_kind level1 = { 1, Z_DEFAULT_STRATEGY }, level6 = { 6, Z_FILTERED }, level9 = { 9, Z_DEFAULT_STRATEGY };
    const deflate_kind stored = { 0, Z_DEFAULT_STRATEGY }, fixed = { 6, Z_FIXED }, huffman = { 6, Z_HUFFMAN_ONLY };
    const deflate_kind mixed[] = { level1, stored, fixed, level9, huffman, level6 };
    const deflate_kind singles[][1] = { { level1 }, { level6 }, { level9 }, { stored }, { fixed }, { huffman } };
    const char *names[] = { "level 1", "level 6 filtered", "level 9", "stored", "fixed Huffman", "Huffman only" };
    const unsigned char *datas[] = { photo_rows, noise };
    const char *data_names[] = { "photo", "random" };
    size_t lens[4096];
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 6; s++) {
            char what[128];
            snprintf(what, sizeof what, "%s, %s, one band", data_names[d], names[s]);
            check_join(what, datas[d], photo_len, &photo_len, 1, singles[s], 1, 2);
            size_t n = 0, band = 65536;
            for (size_t at = 0; at < photo_len; at += band) lens[n++] = photo_len - at < band ? photo_len - at : band;
            snprintf(what, sizeof what, "%s, %s, 64 KiB bands", data_names[d], names[s]);
            check_join(what, datas[d], photo_len, lens, n, singles[s], 1, 3);
        }
    /* Many bands of odd sizes, every kind in turn; then 1-byte bands; then empty bands among them. */
    size_t n = 0, at = 0;
    while (at < photo_len && n < 4000) lens[n] = 1 + tu_next(&r) % 3000, at += lens[n++];
    if (at > photo_len) lens[n - 1] -= at - photo_len;
    check_join("photo, mixed kinds, odd band sizes", photo_rows, photo_len - (at < photo_len ? photo_len - at : 0),
               lens, n, mixed, 6, 4);
    for (size_t k = 0; k < 700; k++) lens[k] = 1;
    check_join("photo, 1-byte bands", photo_rows, 700, lens, 700, mixed, 6, 2);
    size_t with_empty[] = { 0, 5000, 0, 0, 1, 9000, 0 };
    check_join("photo, empty bands first, between and last", photo_rows, 14001, with_empty, 7, mixed, 6, 2);
    size_t nothing[] = { 0 };
    check_join("no data at all", photo_rows, 0, nothing, 1, mixed, 1, 1);
    free(photo_rows);
    free(noise);
    img_free(&photo);
}

/* Walks the device calls invalid, or that end past a band, are refused and name the band. */
static void damaged_walks(const unsigned char *data, const size_t *lens, const deflate_kind *k)
{
    for (int kind = 0; kind < 3; kind++) {
        pngx_band *b = make_bands(data, lens, 3, k, 1);
        deflate_walk_result w[3];
        for (int i = 0; i < 3; i++) CHECK(deflate_walk_prefix(b[i].data, b[i].len, &w[i]) == 0, "band %d walks", i);
        if (kind == 0) w[1].final_start = w[1].end = UINT64_MAX;
        if (kind == 1) w[2].end = (uint64_t)b[2].len * 8 + 1;
        if (kind == 2) w[1].final_start = w[1].end;
        size_t bad = 99, want = kind == 1 ? 2 : 1;
        int rc = png_gpu_join_walked(b, 3, w, &bad);
        CHECK(rc == IP_EFORMAT && bad == want, "damaged walk %d: rc %d, bad %zu", kind, rc, bad);
        free_bands(b, 3);
    }
}

/* A band that is no deflate stream is refused and named. */
static void damaged_band(void)
{
    tu_rng r;
    tu_seed(&r, 3);
    unsigned char *data = random_bytes(50000, &r);
    size_t lens[] = { 20000, 20000, 10000 };
    const deflate_kind k = { 6, Z_DEFAULT_STRATEGY };
    pngx_band *b = make_bands(data, lens, 3, &k, 1);
    b[1].data[0] |= 6;   /* block type 3: reserved */
    size_t bad = 99;
    int rc = png_gpu_join_bands(b, 3, 2, &bad);
    CHECK(rc == IP_EFORMAT && bad == 1, "damaged band: rc %d, bad %zu", rc, bad);
    free_bands(b, 3);
    b = make_bands(data, lens, 3, &k, 1);
    b[2].len -= 2;   /* cut short */
    rc = png_gpu_join_bands(b, 3, 2, &bad);
    CHECK(rc == IP_EFORMAT && bad == 2, "cut band: rc %d, bad %zu", rc, bad);
    free_bands(b, 3);
    damaged_walks(data, lens, &k);
    free(data);
}

static long bytes_before_idat(const char *path, unsigned char *head, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(head, 1, cap, f);
    fclose(f);
    for (size_t at = 8; at + 8 <= n;) {
        size_t len = (size_t)head[at] << 24 | (size_t)head[at + 1] << 16 | (size_t)head[at + 2] << 8 | head[at + 3];
        if (!memcmp(head + at + 4, "IDAT", 4)) return (long)at;
        at += 12 + len;
    }
    return -1;
}

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.' || strstr(e->d_name, "imgpipe-tmp");
    if (d) closedir(d);
    return n;
}

/* One image through the host half: CPU-filtered rows cut into bands of band bytes, deflated by
 * zlib, joined and written; read back three ways. */
static void file_case(FILE *list, int w, int h, int c, ip_dtype t, size_t band, int level, const io_options *base)
{
    char path[512], what[160];
    snprintf(path, sizeof path, "%s/join_%dx%dx%d_%s_b%zu_l%d.png", tu_tmpdir(), w, h, c, img_dtype_name(t), band, level);
    snprintf(what, sizeof what, "%dx%dx%d %s, %zu-byte bands, level %d", w, h, c, img_dtype_name(t), band, level);
    ip_image img = ptu_photo(w, h, c, t, 7, (uint64_t)(w * 31 + h * 7 + c));
    size_t len, n = 0;
    unsigned char *filtered = ptu_filtered(&img, &len);
    size_t *lens = malloc((len / band + 2) * sizeof *lens);
    for (size_t at = 0; at < len; at += band) lens[n++] = len - at < band ? len - at : band;
    const deflate_kind k = { level, Z_FILTERED };
    pngx_band *b = make_bands(filtered, lens, n, &k, 1);
    io_options opt = *base;
    opt.png_level = level;
    char err[256] = "";
    int rc = png_gpu_write_bands(path, &img.shape, &opt, b, n, NULL, err, sizeof err);
    CHECK(rc == IP_OK, "%s: %s", what, err);
    ip_image back = { 0 };
    rc = io_read(path, NULL, &back, err, sizeof err);
    CHECK(rc == IP_OK && ptu_same_pixels(&img, &back), "%s: libpng (io_read): rc %d %s", what, rc, err);
    size_t got = 0;
    unsigned char *data = ptu_inflate_file(path, &got);
    CHECK(data && got == len && !memcmp(data, filtered, len), "%s: IDAT inflates to %zu of %zu filtered bytes", what,
          got, len);
    /* Everything before the image data is the CPU writer's, byte for byte. */
    char cpu_path[600];
    snprintf(cpu_path, sizeof cpu_path, "%s.cpu.png", path);
    rc = io_write(cpu_path, &img, &opt, err, sizeof err);
    unsigned char head_gpu[65536], head_cpu[65536];
    long at_gpu = bytes_before_idat(path, head_gpu, sizeof head_gpu), at_cpu = bytes_before_idat(cpu_path, head_cpu, sizeof head_cpu);
    /* (the first IDAT's length differs: from its type on, its zlib header too) */
    CHECK(!rc && at_gpu > 0 && at_gpu == at_cpu && !memcmp(head_gpu, head_cpu, (size_t)at_gpu) &&
              !memcmp(head_gpu + at_gpu + 4, head_cpu + at_cpu + 4, 6),
          "%s: the chunks before the image data and the zlib header differ from the CPU writer's (%ld, %ld)", what,
          at_gpu, at_cpu);
    ptu_list_add(list, path, &img);
    free(data);
    img_free(&back);
    free_bands(b, n);
    free(lens);
    free(filtered);
    img_free(&img);
}

static void file_cases(void)
{
    char list_path[512];
    snprintf(list_path, sizeof list_path, "%s/join_files.txt", tu_tmpdir());
    FILE *list = fopen(list_path, "w");
    io_meta meta;
    meta_init(&meta);
    meta_add_text(&meta, META_TEXT_PLAIN, 0, "Comment", NULL, NULL, "written by the GPU path's host half", 35);
    meta.res_unit = META_RES_INCH, meta.res_x = 300, meta.res_y = 300;
    io_options opt;
    io_default_options(&opt);
    opt.meta = &meta;
    opt.threads = 3;
    static const int sizes[][2] = { { 1, 1 }, { 1, 37 }, { 37, 1 }, { 257, 13 }, { 131, 67 } };
    static const size_t bands[] = { 1, 7, 1000, 65536 };
    for (int s = 0; s < 5; s++)
        for (int c = 1; c <= 4; c++)
            for (int t = 0; t < 2; t++) {
                size_t band = bands[(s + c + t) % 4];
                file_case(list, sizes[s][0], sizes[s][1], c, t ? IP_U16 : IP_U8, band, (s + c) % 2 ? 6 : 1, &opt);
            }
    file_case(list, 401, 173, 3, IP_U8, 65536, 9, &opt);
    file_case(list, 401, 173, 4, IP_U16, 4099, 0, &opt);
    fclose(list);
    meta_clear(&meta);
    int rc = ptu_decode_check(list_path);
    if (rc == 77) printf("note: Pillow/OpenCV check skipped (no /usr/bin/python3 with both)\n");
    CHECK(rc == 0 || rc == 77, "Pillow/OpenCV decodes differ (%d)", rc);
}

static void damaged_file(void)
{
    char dir[512], path[600], err[256] = "";
    snprintf(dir, sizeof dir, "%s/damaged", tu_tmpdir());
    if (mkdir(dir, 0700) != 0) exit(2);
    snprintf(path, sizeof path, "%s/out.png", dir);
    ip_image img = ptu_photo(64, 64, 3, IP_U8, 0, 1);
    size_t len;
    unsigned char *filtered = ptu_filtered(&img, &len);
    size_t lens[] = { len / 2, len - len / 2 };
    const deflate_kind k = { 6, Z_DEFAULT_STRATEGY };
    pngx_band *b = make_bands(filtered, lens, 2, &k, 1);
    b[0].data[0] |= 6;
    io_options opt;
    io_default_options(&opt);
    int rc = png_gpu_write_bands(path, &img.shape, &opt, b, 2, NULL, err, sizeof err);
    CHECK(rc == IP_ECUDA && strstr(err, "band 0"), "damaged band: rc %d, message '%s'", rc, err);
    CHECK(files_in(dir) == 0, "damaged band: %d files left in the folder", files_in(dir));
    free_bands(b, 2);
    free(filtered);
    img_free(&img);
}

int main(void)
{
    join_cases();
    damaged_band();
    file_cases();
    damaged_file();
    return tu_finish();
}
