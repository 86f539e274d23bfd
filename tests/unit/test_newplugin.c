/* newplugin_write: the template folder written with the stage renamed, byte for byte what
 * samples/plugin-template holds after renaming; bad names and existing folders refused. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "imgpipe/plugin.h"
#include "cli/newplugin.h"
#include "testutil.h"

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    *size = n;
    return buf;
}

/* Every "threshold" becomes name, every "THRESHOLD" its upper case. */
static char *renamed(const char *text, const char *name)
{
    char upper[64];
    size_t nlen = strlen(name);
    for (size_t i = 0; i <= nlen; i++) upper[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
    char *out = malloc(strlen(text) * (nlen + 1) + 1), *o = out;
    while (*text) {
        if (strncmp(text, "threshold", 9) == 0 || strncmp(text, "THRESHOLD", 9) == 0) {
            memcpy(o, text[0] == 't' ? name : upper, nlen);
            o += nlen;
            text += 9;
        } else {
            *o++ = *text++;
        }
    }
    *o = '\0';
    return out;
}

static void check_bad_names(void)
{
    static const char *const bad[] = { "", "Abc", "1abc", "a-b", "ab c", "_x", "stage.so", "x/y", "test", "all",
                                       "a23456789012345678901234567890123456789012345678x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        int rc = newplugin_check_name(bad[i], err, sizeof err);
        CHECK(rc == IP_EINVAL && err[0], "name '%s' accepted (rc %d)", bad[i], rc);
    }
    char err[256] = "";
    CHECK(newplugin_check_name(NULL, err, sizeof err) == IP_EINVAL, "NULL name accepted");
    static const char *const good[] = { "a", "my_stage2", "z9", "a23456789012345678901234567890123456789012345678" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(newplugin_check_name(good[i], err, sizeof err) == IP_OK, "name '%s' refused: %s", good[i], err);
}

/* The folder written for name matches the template folder file by file, renamed. */
static void check_written(const char *template_dir, const char *out_dir, const char *name)
{
    DIR *d = opendir(template_dir);
    CHECK(d != NULL, "cannot open %s", template_dir);
    if (!d) return;
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char src[1024], dst[1024];
        char *dst_name = renamed(e->d_name, name);
        snprintf(src, sizeof src, "%s/%s", template_dir, e->d_name);
        snprintf(dst, sizeof dst, "%s/%s", out_dir, dst_name);
        size_t src_size, dst_size;
        char *want_raw = read_file(src, &src_size), *got = read_file(dst, &dst_size);
        char *want = want_raw ? renamed(want_raw, name) : NULL;
        CHECK(got && want && dst_size == strlen(want) && memcmp(got, want, dst_size) == 0,
              "%s differs from the renamed %s", dst, src);
        CHECK(got && !strstr(got, "threshold") && !strstr(got, "THRESHOLD"), "%s still names the template", dst);
        files++;
        free(want_raw);
        free(want);
        free(got);
        free(dst_name);
    }
    closedir(d);
    CHECK(files == newplugin_n_files && files >= 5, "%d template files on disk, %d embedded", files, newplugin_n_files);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return d ? n : -1;
}

int main(void)
{
    const char *src = getenv("IMGPIPE_SOURCE_DIR");
    if (!src) tu_skip("IMGPIPE_SOURCE_DIR is not set: run through ctest");
    char template_dir[1024], out_dir[1024], err[512];
    snprintf(template_dir, sizeof template_dir, "%s/samples/plugin-template", src);
    check_bad_names();

    snprintf(out_dir, sizeof out_dir, "%s/edge_finder", tu_tmpdir());
    int rc = newplugin_write("edge_finder", out_dir, err, sizeof err);
    CHECK(rc == IP_OK, "write: %s", err);
    check_written(template_dir, out_dir, "edge_finder");
    struct stat st;
    snprintf(out_dir, sizeof out_dir, "%s/edge_finder/edge_finder.c", tu_tmpdir());
    CHECK(stat(out_dir, &st) == 0, "edge_finder.c missing");

    /* An existing folder is refused and left as it was. */
    snprintf(out_dir, sizeof out_dir, "%s/edge_finder", tu_tmpdir());
    int before = count_entries(out_dir);
    err[0] = '\0';
    rc = newplugin_write("other", out_dir, err, sizeof err);
    CHECK(rc != IP_OK && strstr(err, "already exists") && strstr(err, out_dir), "existing folder: rc %d, '%s'", rc, err);
    CHECK(count_entries(out_dir) == before, "the existing folder changed");

    /* No DIR: a folder named after the stage, in the current folder. */
    CHECK(chdir(tu_tmpdir()) == 0, "chdir");
    rc = newplugin_write("blur2", NULL, err, sizeof err);
    CHECK(rc == IP_OK, "write with no dir: %s", err);
    check_written(template_dir, "blur2", "blur2");

    /* A missing parent folder, or a bad name: an error, and nothing created. */
    err[0] = '\0';
    rc = newplugin_write("fine", "no/such/parent/fine", err, sizeof err);
    CHECK(rc != IP_OK && strstr(err, "no/such/parent/fine"), "missing parent: rc %d, '%s'", rc, err);
    err[0] = '\0';
    rc = newplugin_write("Bad-Name", "badname", err, sizeof err);
    CHECK(rc == IP_EINVAL && strstr(err, "Bad-Name") && stat("badname", &st) != 0, "bad name: rc %d, '%s'", rc, err);

    /* A test runs from the build tree, which holds no CMake package: said, not guessed. */
    char prefix[1024] = "";
    err[0] = '\0';
    rc = newplugin_prefix(prefix, sizeof prefix, err, sizeof err);
    CHECK(rc == IP_EUNSUPPORTED && strstr(err, "cmake --install") && !prefix[0], "prefix: rc %d, '%s'", rc, err);
    return tu_finish();
}
