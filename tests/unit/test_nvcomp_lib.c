/* nvCOMP's loader without a GPU: the real library opens and resolves every function (when
 * IMGPIPE_NVCOMP_LIB names it or libnvcomp.so.6 is on the search path), a wrong path or a library
 * that is not nvCOMP fails with one line saying why, and a build without CUDA says that. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include "gpu/gpu.h"
#include "gpu/nvcomp.h"
#include "imgpipe/plugin.h"
#include "testutil.h"

static int one_line(const char *s)
{
    return s[0] != '\0' && strchr(s, '\n') == NULL;
}

static void wrong_path_says_so(void)
{
    char err[256] = "";
    nvcomp_lib *lib = (nvcomp_lib *)1;
    setenv("IMGPIPE_NVCOMP_LIB", "/nonexistent/libnvcomp.so.6", 1);
    int rc = nvcomp_open(&lib, err, sizeof err);
    CHECK(rc == IP_EUNSUPPORTED && lib == NULL, "rc %d", rc);
    CHECK(one_line(err), "'%s'", err);
    if (gpu_built())
        CHECK(strstr(err, "IMGPIPE_NVCOMP_LIB=/nonexistent/libnvcomp.so.6") != NULL, "'%s'", err);
    else
        CHECK(strstr(err, "without CUDA") != NULL, "'%s'", err);
}

/* libz is a shared library every machine here has, and no nvCOMP. */
static void not_nvcomp_says_so(void)
{
    if (!gpu_built()) return;
    char err[256] = "";
    nvcomp_lib *lib = NULL;
    setenv("IMGPIPE_NVCOMP_LIB", "libz.so.1", 1);
    int rc = nvcomp_open(&lib, err, sizeof err);
    CHECK(rc == IP_EUNSUPPORTED && lib == NULL, "rc %d", rc);
    CHECK(one_line(err) && strstr(err, "lacks a function imgpipe needs: nvcompGetProperties"), "'%s'", err);
}

static void real_library_opens(const char *chosen)
{
    if (!gpu_built()) return;
    char err[256] = "";
    nvcomp_lib *lib = NULL;
    if (chosen) setenv("IMGPIPE_NVCOMP_LIB", chosen, 1);
    else unsetenv("IMGPIPE_NVCOMP_LIB");
    int rc = nvcomp_open(&lib, err, sizeof err);
    if (rc != IP_OK && !chosen) {
        printf("nvCOMP not installed here (%s): its open is not tested\n", err);
        return;
    }
    CHECK(rc == IP_OK && lib != NULL, "rc %d: %s", rc, err);
    if (!lib) return;
    const char *what = nvcomp_description(lib);
    CHECK(strncmp(what, "nvCOMP 6.", 9) == 0, "'%s'", what);
    size_t bound = 0;
    /* a host-only query: the bound must hold at least the data */
    rc = nvcomp_max_compressed_bytes(lib, NVCOMP_DEFLATE, 2, 65536, &bound, err, sizeof err);
    CHECK(rc == IP_OK && bound >= 65536, "rc %d bound %zu: %s", rc, bound, err);
    rc = nvcomp_max_compressed_bytes(lib, NVCOMP_DEFLATE, 6, 65536, &bound, err, sizeof err);
    CHECK(rc == IP_EINVAL && strstr(err, "algorithm 6"), "rc %d: %s", rc, err);
    rc = nvcomp_max_compressed_bytes(lib, NVCOMP_ZSTD, 0, 65536, &bound, err, sizeof err);
    CHECK(rc == IP_OK && bound >= 65536, "rc %d bound %zu: %s", rc, bound, err);
    nvcomp_close(lib);
}

int main(void)
{
    char *chosen = getenv("IMGPIPE_NVCOMP_LIB") ? strdup(getenv("IMGPIPE_NVCOMP_LIB")) : NULL;
    if (chosen && !chosen[0]) {
        free(chosen);
        chosen = NULL;
    }
    real_library_opens(chosen);
    wrong_path_says_so();
    not_nvcomp_says_so();
    free(chosen);
    return tu_finish();
}
