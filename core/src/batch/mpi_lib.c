#define _GNU_SOURCE
#include "batch/mpi_lib.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "imgpipe/plugin.h"

static int env_int(const char *name, int lo, int hi, int *out)
{
    const char *text = getenv(name);
    if (!text || !*text) return 0;
    char *end;
    long v = strtol(text, &end, 10);
    if (*end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

int mpi_lib_place(mpi_place *pl)
{
    mpi_place p;
    if (!env_int("OMPI_COMM_WORLD_SIZE", 1, INT_MAX, &p.size) || p.size < 2) return 0;
    if (!env_int("OMPI_COMM_WORLD_RANK", 0, p.size - 1, &p.rank)) return 0;
    if (!env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1, p.size, &p.local_size)) p.local_size = 1;
    if (!env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0, p.local_size - 1, &p.local_rank)) p.local_rank = 0;
    *pl = p;
    return 1;
}

#ifdef IMGPIPE_HAVE_MPI
#include <dlfcn.h>
#include <mpi.h>

/* Open MPI's handles (MPI_COMM_WORLD, MPI_BYTE, MPI_ERRORS_RETURN) are the addresses of these
 * exported objects; its ABI has kept them since libmpi.so.40 (Open MPI 3.0). */
#define MPI_FUNCTIONS(X)                                                                       \
    X(MPI_Init_thread) X(MPI_Comm_set_errhandler) X(MPI_Isend) X(MPI_Test)     \
    X(MPI_Request_free) X(MPI_Iprobe) X(MPI_Get_count) X(MPI_Recv) X(MPI_Finalize) X(MPI_Error_string)

struct mpi_lib {
    void *lib;
    MPI_Comm world;
    MPI_Datatype byte;
    MPI_Errhandler errors_return;
    void **abandoned;        /* copies of sends given up on: MPI may still read them */
    int n_abandoned;
    struct {
#define DECLARE_FN(name) __typeof__(&name) name;
        MPI_FUNCTIONS(DECLARE_FN)
#undef DECLARE_FN
    } api;
};

int mpi_lib_built(void) { return 1; }

static int resolve(mpi_lib *m, char *err, size_t errlen)
{
    void *world = dlsym(m->lib, "ompi_mpi_comm_world"), *byte = dlsym(m->lib, "ompi_mpi_byte");
    void *errors_return = dlsym(m->lib, "ompi_mpi_errors_return");
    if (!world || !byte || !errors_return) {
        snprintf(err, errlen, "the MPI library is not Open MPI 3 or later (no ompi_mpi_comm_world)");
        return IP_EUNSUPPORTED;
    }
    m->world = (MPI_Comm)world;
    m->byte = (MPI_Datatype)byte;
    m->errors_return = (MPI_Errhandler)errors_return;
#define RESOLVE_FN(name)                                                          \
    {                                                                             \
        void *sym = dlsym(m->lib, #name);                                         \
        if (!sym) {                                                               \
            snprintf(err, errlen, "the MPI library lacks %s", #name);             \
            return IP_EUNSUPPORTED;                                               \
        }                                                                         \
        memcpy(&m->api.name, &sym, sizeof sym);                                   \
    }
    MPI_FUNCTIONS(RESOLVE_FN)
#undef RESOLVE_FN
    return IP_OK;
}

static int mpi_fail(const mpi_lib *m, int code, const char *what, char *err, size_t errlen)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (m->api.MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", code);
    snprintf(err, errlen, "MPI %s: %s", what, text);
    return IP_EIO;
}

int mpi_lib_open(mpi_lib **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *name = getenv("IMGPIPE_MPI_LIB");
    if (!name || !*name) name = "libmpi.so.40";
    mpi_lib *m = calloc(1, sizeof *m);
    if (!m) return IP_ENOMEM;
    /* The messages are small: the shared-memory single copy (CMA) brings nothing, and it fails in
     * containers that forbid ptrace. A setting given to mpirun wins. */
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
    /* Global: Open MPI's own components, opened by libmpi, resolve its symbols. */
    if (!(m->lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) {
        snprintf(err, errlen, "cannot load %s (Open MPI 3 or later): %s", name, dlerror());
        free(m);
        return IP_EUNSUPPORTED;
    }
    int rc = resolve(m, err, errlen), provided = 0, code;
    if (rc == IP_OK && (code = m->api.MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided)) != MPI_SUCCESS)
        rc = mpi_fail(m, code, "initialisation", err, errlen);
    if (rc == IP_OK && provided < MPI_THREAD_FUNNELED) {
        snprintf(err, errlen, "the MPI library offers no thread support (level %d)", provided);
        m->api.MPI_Finalize();
        rc = IP_EUNSUPPORTED;
    }
    if (rc != IP_OK) {
        free(m);   /* the library stays loaded: Open MPI cannot be unloaded safely */
        return rc;
    }
    m->api.MPI_Comm_set_errhandler(m->world, m->errors_return);   /* errors come back as codes */
    *out = m;
    return IP_OK;
}

static void nap_us(long us)
{
    struct timespec ts = { 0, us * 1000 };
    nanosleep(&ts, NULL);
}

static int keep_abandoned(mpi_lib *m, void *copy)
{
    void **grown = realloc(m->abandoned, (size_t)(m->n_abandoned + 1) * sizeof *grown);
    if (!grown) return 0;
    m->abandoned = grown;
    m->abandoned[m->n_abandoned++] = copy;
    return 1;
}

int mpi_lib_send(mpi_lib *m, int dest, int tag, const void *data, size_t len, mpi_give_up give_up, void *user,
                 int *abandoned, char *err, size_t errlen)
{
    *abandoned = 0;
    if (len > INT_MAX) {
        snprintf(err, errlen, "MPI message of %zu bytes is too long", len);
        return IP_ELIMIT;
    }
    void *copy = malloc(len ? len : 1);
    if (!copy) return IP_ENOMEM;
    memcpy(copy, data, len);
    MPI_Request req;
    int done = 0, code = m->api.MPI_Isend(copy, (int)len, m->byte, dest, tag, m->world, &req);
    for (long polls = 0; code == MPI_SUCCESS && !done; polls++) {
        if ((code = m->api.MPI_Test(&req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS || done) break;
        if (give_up && polls % 20 == 19 && give_up(user)) {
            m->api.MPI_Request_free(&req);
            if (!keep_abandoned(m, copy)) return IP_ENOMEM;   /* the copy must outlive the request */
            *abandoned = 1;
            return IP_OK;
        }
        nap_us(500);
    }
    free(copy);
    return code == MPI_SUCCESS ? IP_OK : mpi_fail(m, code, "send", err, errlen);
}

int mpi_lib_probe(mpi_lib *m, int *ready, int *source, int *tag, size_t *len, char *err, size_t errlen)
{
    MPI_Status st;
    int count = 0, code = m->api.MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, m->world, ready, &st);
    if (code != MPI_SUCCESS) return mpi_fail(m, code, "probe", err, errlen);
    if (!*ready) return IP_OK;
    if ((code = m->api.MPI_Get_count(&st, m->byte, &count)) != MPI_SUCCESS || count < 0)
        return mpi_fail(m, code, "message length", err, errlen);
    *source = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    *len = (size_t)count;
    return IP_OK;
}

int mpi_lib_recv(mpi_lib *m, int source, int tag, void *data, size_t len, char *err, size_t errlen)
{
    MPI_Status st;
    int code = m->api.MPI_Recv(data, (int)len, m->byte, source, tag, m->world, &st);
    return code == MPI_SUCCESS ? IP_OK : mpi_fail(m, code, "receive", err, errlen);
}

void mpi_lib_close(mpi_lib *m, int finalize)
{
    if (!m) return;
    if (finalize) m->api.MPI_Finalize();
    for (int i = 0; i < m->n_abandoned; i++) free(m->abandoned[i]);
    free(m->abandoned);
    free(m);
}

#else

struct mpi_lib {
    int unused;
};

int mpi_lib_built(void) { return 0; }

int mpi_lib_open(mpi_lib **m, char *err, size_t errlen)
{
    *m = NULL;
    snprintf(err, errlen, "imgpipe was built without MPI (-DIMGPIPE_MPI=ON, with Open MPI's development files)");
    return IP_EUNSUPPORTED;
}

int mpi_lib_send(mpi_lib *m, int dest, int tag, const void *data, size_t len, mpi_give_up give_up, void *user,
                 int *abandoned, char *err, size_t errlen)
{
    (void)m, (void)dest, (void)tag, (void)data, (void)len, (void)give_up, (void)user;
    *abandoned = 0;
    snprintf(err, errlen, "built without MPI");
    return IP_EUNSUPPORTED;
}

int mpi_lib_probe(mpi_lib *m, int *ready, int *source, int *tag, size_t *len, char *err, size_t errlen)
{
    (void)m, (void)source, (void)tag, (void)len;
    *ready = 0;
    snprintf(err, errlen, "built without MPI");
    return IP_EUNSUPPORTED;
}

int mpi_lib_recv(mpi_lib *m, int source, int tag, void *data, size_t len, char *err, size_t errlen)
{
    (void)m, (void)source, (void)tag, (void)data, (void)len;
    snprintf(err, errlen, "built without MPI");
    return IP_EUNSUPPORTED;
}

void mpi_lib_close(mpi_lib *m, int finalize) { (void)m, (void)finalize; }
#endif
