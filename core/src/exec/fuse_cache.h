/* The disk cache of compiled fused kernels: $XDG_CACHE_HOME/imgpipe (or ~/.cache/imgpipe),
 * one file per key. A key hashes everything that decides the code: the source, the compile
 * options, the device's architecture and the NVRTC and driver versions. */
#ifndef IMGPIPE_FUSE_CACHE_H
#define IMGPIPE_FUSE_CACHE_H
#include <stddef.h>

#define FUSE_KEY_CHARS 33   /* 32 hex digits and the NUL */
#define FUSE_CACHE_MAX_BYTES ((size_t)64 << 20)

/* The cache folder, made if missing; IP_EUNSUPPORTED when neither variable is set or it cannot
 * be made (fusion then compiles every run). */
int fuse_cache_dir(char *dir, size_t len, char *err, size_t errlen);
/* 128 bits over the parts, each counted with its length (so "ab"+"c" differs from "a"+"bc"). */
void fuse_cache_key(const char *const *parts, int n, char key[FUSE_KEY_CHARS]);
/* IP_OK with *data malloc'd; IP_EIO when the entry is absent, truncated, or not for this key. */
int fuse_cache_load(const char *dir, const char *key, void **data, size_t *bytes);
/* Written to a temporary file of its own and renamed, so a reader never sees half an entry. */
int fuse_cache_store(const char *dir, const char *key, const void *data, size_t bytes, char *err, size_t errlen);
/* Key's entry held for one maker at a time, across threads and processes (flock on a lock file
 * beside it): a caller that missed takes it, loads again, and compiles only if still missing, so a
 * folder's workers compile a kernel once, not each at once. *fd -1: no lock could be had (each
 * then compiles, as before). */
void fuse_cache_lock(const char *dir, const char *key, int *fd);
void fuse_cache_unlock(int fd);
#endif
