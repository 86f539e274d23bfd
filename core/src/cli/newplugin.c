#define _XOPEN_SOURCE 700
#include "cli/newplugin.h"
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "imgpipe/plugin.h"

#ifndef IMGPIPE_PLUGIN_RELDIR
#define IMGPIPE_PLUGIN_RELDIR "../lib/imgpipe/plugins"
#endif

/* Target names CMake keeps for itself: a plugin of that name would not configure. */
static const char *const reserved_names[] = {
    "all", "clean", "help", "install", "test", "package", "package_source", "edit_cache",
    "rebuild_cache", "list_install_components", "install_strip", "install_local",
};

int newplugin_check_name(const char *name, char *err, size_t errlen)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len > NEWPLUGIN_MAX_NAME) {
        snprintf(err, errlen, "a stage name has 1 to %d characters", NEWPLUGIN_MAX_NAME);
        return IP_EINVAL;
    }
    if (name[0] < 'a' || name[0] > 'z') {
        snprintf(err, errlen, "stage name '%s' must start with a lowercase letter", name);
        return IP_EINVAL;
    }
    for (size_t i = 1; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
            snprintf(err, errlen, "stage name '%s' may hold only lowercase letters, digits and '_' (not '%c')",
                     name, c);
            return IP_EINVAL;
        }
    }
    for (size_t i = 0; i < sizeof reserved_names / sizeof reserved_names[0]; i++)
        if (strcmp(name, reserved_names[i]) == 0) {
            snprintf(err, errlen, "stage name '%s' is reserved by CMake: choose another", name);
            return IP_EINVAL;
        }
    return IP_OK;
}

static size_t count_occurrences(const unsigned char *data, size_t size, const char *word, size_t wlen)
{
    size_t n = 0;
    for (size_t i = 0; i + wlen <= size; i++)
        if (memcmp(data + i, word, wlen) == 0) {
            n++;
            i += wlen - 1;
        }
    return n;
}

/* Replaces the template's name, in lower and upper case, by name; NULL when out of memory
 * or when the size would overflow. The result is 0-terminated. */
static char *rename_text(const unsigned char *data, size_t size, const char *lower, const char *upper,
                         size_t *out_size)
{
    static const char tl[] = NEWPLUGIN_TEMPLATE_NAME;
    char tu[sizeof tl];
    for (size_t i = 0; i < sizeof tl; i++) tu[i] = tl[i] >= 'a' && tl[i] <= 'z' ? (char)(tl[i] - 'a' + 'A') : tl[i];
    size_t tlen = sizeof tl - 1, nlen = strlen(lower);
    size_t hits = count_occurrences(data, size, tl, tlen) + count_occurrences(data, size, tu, tlen);
    if (nlen > tlen && hits > (SIZE_MAX - size - 1) / (nlen - tlen)) return NULL;
    size_t total = nlen > tlen ? size + hits * (nlen - tlen) : size - hits * (tlen - nlen);
    char *out = malloc(total + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < size;) {
        int is_lower = i + tlen <= size && memcmp(data + i, tl, tlen) == 0;
        int is_upper = !is_lower && i + tlen <= size && memcmp(data + i, tu, tlen) == 0;
        if (is_lower || is_upper) {
            memcpy(out + o, is_lower ? lower : upper, nlen);
            o += nlen;
            i += tlen;
        } else {
            out[o++] = (char)data[i++];
        }
    }
    out[o] = '\0';
    *out_size = o;
    return out;
}

static int write_whole(const char *path, const char *data, size_t size, char *err, size_t errlen)
{
    FILE *f = fopen(path, "wbx");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return IP_EIO;
    }
    size_t wrote = fwrite(data, 1, size, f);
    int failed = wrote != size || ferror(f);
    if (fclose(f) != 0) failed = 1;
    if (failed) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
        unlink(path);
        return IP_EIO;
    }
    return IP_OK;
}

/* Writes template file k under dir, renamed; remembers its path for a clean-up. */
static int write_file(int k, const char *dir, const char *lower, const char *upper, char **written,
                      char *err, size_t errlen)
{
    const newplugin_file *f = &newplugin_files[k];
    size_t text_size, name_size;
    char *text = rename_text(f->data, f->size, lower, upper, &text_size);
    char *rel = rename_text((const unsigned char *)f->path, strlen(f->path), lower, upper, &name_size);
    size_t path_len = strlen(dir) + name_size + 2;
    char *path = text && rel ? malloc(path_len) : NULL;
    int rc = IP_ENOMEM;
    if (path) {
        snprintf(path, path_len, "%s/%s", dir, rel);
        rc = write_whole(path, text, text_size, err, errlen);
        if (rc == IP_OK) written[k] = path;
    } else {
        snprintf(err, errlen, "out of memory");
    }
    if (rc != IP_OK) free(path);
    free(text);
    free(rel);
    return rc;
}

static int make_folder(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0777) == 0) return IP_OK;
    if (errno == EEXIST)
        snprintf(err, errlen, "%s already exists: give a folder that does not, nothing was written", dir);
    else
        snprintf(err, errlen, "%s: cannot create the folder: %s", dir, strerror(errno));
    return IP_EIO;
}

int newplugin_write(const char *name, const char *dir, char *err, size_t errlen)
{
    int rc = newplugin_check_name(name, err, errlen);
    if (rc != IP_OK) return rc;
    if (!dir || !*dir) dir = name;
    char upper[NEWPLUGIN_MAX_NAME + 1];
    size_t len = strlen(name);
    for (size_t i = 0; i <= len; i++) upper[i] = name[i] >= 'a' && name[i] <= 'z' ? (char)(name[i] - 'a' + 'A') : name[i];
    char **written = calloc((size_t)newplugin_n_files, sizeof *written);
    if (!written) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    rc = make_folder(dir, err, errlen);
    int made_folder = rc == IP_OK;
    for (int k = 0; k < newplugin_n_files && rc == IP_OK; k++) rc = write_file(k, dir, name, upper, written, err, errlen);
    for (int k = 0; k < newplugin_n_files; k++) {
        if (rc != IP_OK && written[k]) unlink(written[k]);
        free(written[k]);
    }
    free(written);
    if (rc != IP_OK && made_folder) rmdir(dir);
    return rc;
}

/* The package lies in <libdir>/cmake/imgpipe, two levels above the plugin folder <libdir>/imgpipe/plugins. */
int newplugin_prefix(char *out, size_t outlen, char *err, size_t errlen)
{
    char exe[PATH_MAX], probe[PATH_MAX + 128], prefix[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = len > 0 ? (exe[len] = '\0', strrchr(exe, '/')) : NULL;
    if (!slash) {
        snprintf(err, errlen, "cannot tell where this imgpipe is installed");
        return IP_EIO;
    }
    *slash = '\0';
    snprintf(probe, sizeof probe, "%s/%s/../../cmake/imgpipe/imgpipeConfig.cmake", exe, IMGPIPE_PLUGIN_RELDIR);
    if (access(probe, R_OK) != 0) {
        snprintf(err, errlen, "this imgpipe (%s) is not an installed one: run cmake --install BUILD --prefix PREFIX, "
                 "then use PREFIX", exe);
        return IP_EUNSUPPORTED;
    }
    snprintf(probe, sizeof probe, "%s/..", exe);
    if (!realpath(probe, prefix) || snprintf(out, outlen, "%s", prefix) >= (int)outlen) {
        snprintf(err, errlen, "cannot tell where this imgpipe is installed");
        return IP_EIO;
    }
    return IP_OK;
}
