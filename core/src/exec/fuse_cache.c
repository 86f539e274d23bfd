#define _DEFAULT_SOURCE   /* flock */
#include "exec/fuse_cache.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "imgpipe/plugin.h"

static const char cache_magic[8] = { 'I', 'P', 'F', 'U', 'S', 'E', '1', '\0' };

static int make_dir(const char *path)
{
    return mkdir(path, 0700) == 0 || errno == EEXIST ? IP_OK : IP_EIO;
}

int fuse_cache_dir(char *dir, size_t len, char *err, size_t errlen)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[4096];
    int n;
    if (xdg && xdg[0] == '/') n = snprintf(base, sizeof base, "%s", xdg);
    else if (home && home[0]) n = snprintf(base, sizeof base, "%s/.cache", home);
    else {
        snprintf(err, errlen, "no cache folder: neither XDG_CACHE_HOME nor HOME is set");
        return IP_EUNSUPPORTED;
    }
    if (n < 0 || (size_t)n >= sizeof base || (size_t)snprintf(dir, len, "%s/imgpipe", base) >= len) {
        snprintf(err, errlen, "the cache folder's path is too long");
        return IP_EUNSUPPORTED;
    }
    if (make_dir(base) != IP_OK || make_dir(dir) != IP_OK) {
        snprintf(err, errlen, "cannot make the cache folder %s: %s", dir, strerror(errno));
        return IP_EUNSUPPORTED;
    }
    return IP_OK;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Two FNV-1a streams with different starts: a cache key, not a defence against forgery. */
void fuse_cache_key(const char *const *parts, int n, char key[FUSE_KEY_CHARS])
{
    uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
    for (int i = 0; i < n; i++) {
        uint64_t len = strlen(parts[i]);
        a = fnv1a(fnv1a(a, &len, sizeof len), parts[i], len);
        b = fnv1a(fnv1a(b, parts[i], len), &len, sizeof len);
    }
    snprintf(key, FUSE_KEY_CHARS, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static int entry_path(const char *dir, const char *key, const char *suffix, char *path, size_t len)
{
    int n = snprintf(path, len, "%s/%s.cubin%s", dir, key, suffix);
    return n > 0 && (size_t)n < len;
}

/* Layout: magic, the key's 32 characters, the length (8 bytes, little-endian as written on this
 * machine), the data, and a checksum of the data. */
static int read_entry(FILE *f, const char *key, void **data, size_t *bytes)
{
    char magic[8], stored_key[32];
    uint64_t len = 0, sum = 0;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, cache_magic, 8) || fread(stored_key, 1, 32, f) != 32 ||
        memcmp(stored_key, key, 32) || fread(&len, sizeof len, 1, f) != 1 || len == 0 || len > FUSE_CACHE_MAX_BYTES)
        return IP_EIO;
    char *buf = malloc((size_t)len);
    if (!buf) return IP_EIO;
    if (fread(buf, 1, (size_t)len, f) != len || fread(&sum, sizeof sum, 1, f) != 1 ||
        sum != fnv1a(0xcbf29ce484222325ull, buf, (size_t)len) || fgetc(f) != EOF) {
        free(buf);
        return IP_EIO;
    }
    *data = buf;
    *bytes = (size_t)len;
    return IP_OK;
}

int fuse_cache_load(const char *dir, const char *key, void **data, size_t *bytes)
{
    char path[4200];
    *data = NULL;
    *bytes = 0;
    if (strlen(key) != 32 || !entry_path(dir, key, "", path, sizeof path)) return IP_EIO;
    FILE *f = fopen(path, "rb");
    if (!f) return IP_EIO;
    int rc = read_entry(f, key, data, bytes);
    fclose(f);
    return rc;
}

int fuse_cache_store(const char *dir, const char *key, const void *data, size_t bytes, char *err, size_t errlen)
{
    char path[4200], tmp[4300];
    if (strlen(key) != 32 || bytes == 0 || bytes > FUSE_CACHE_MAX_BYTES || !entry_path(dir, key, "", path, sizeof path) ||
        !entry_path(dir, key, ".XXXXXX", tmp, sizeof tmp)) {
        snprintf(err, errlen, "cannot cache a kernel of %zu bytes", bytes);
        return IP_EINVAL;
    }
    int fd = mkstemp(tmp);   /* unique to this writer: threads of one process share its pid */
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            remove(tmp);
        }
        return IP_EIO;
    }
    uint64_t len = bytes, sum = fnv1a(0xcbf29ce484222325ull, data, bytes);
    int ok = fwrite(cache_magic, 1, 8, f) == 8 && fwrite(key, 1, 32, f) == 32 && fwrite(&len, sizeof len, 1, f) == 1 &&
             fwrite(data, 1, bytes, f) == bytes && fwrite(&sum, sizeof sum, 1, f) == 1;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        remove(tmp);
        return IP_EIO;
    }
    return IP_OK;
}

void fuse_cache_lock(const char *dir, const char *key, int *fd)
{
    char path[4200];
    *fd = -1;
    if (strlen(key) != 32 || !entry_path(dir, key, ".lock", path, sizeof path)) return;
    int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0) return;
    int rc;
    while ((rc = flock(lock, LOCK_EX)) != 0 && errno == EINTR) continue;
    if (rc != 0) {
        close(lock);
        return;
    }
    *fd = lock;
}

void fuse_cache_unlock(int fd)
{
    if (fd >= 0) close(fd);   /* closing the only descriptor of its open file releases the lock */
}
