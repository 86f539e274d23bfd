/* io_write_bytes: encoded bytes land whole at the path through a temporary file; failures leave
 * neither the file nor the temporary; on_temp hears of the temporary before it exists (a signal
 * handler that removes what it heard of must never miss a file that is there) and again when it
 * is gone. */
#include "test_io_helpers.h"
#include <dirent.h>
#include <unistd.h>

static char err[512];

static int temporaries_left(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, ".imgpipe-tmp-", 13)) n++;
    closedir(d);
    return n;
}

typedef struct {
    int told_made, told_gone, existed_when_told, named_after_pid;
    char path[1024];
} temp_log;

static void log_temp(void *user, const char *tmp_path, int made)
{
    temp_log *log = user;
    char pid[32];
    snprintf(pid, sizeof pid, "-%ld-", (long)getpid());
    if (made) {
        log->told_made++;
        log->existed_when_told += access(tmp_path, F_OK) == 0;
        log->named_after_pid += strstr(tmp_path, pid) != NULL;
        snprintf(log->path, sizeof log->path, "%s", tmp_path);
    } else {
        log->told_gone += strcmp(log->path, tmp_path) == 0;
    }
}

static void check_temp_told(const unsigned char *bytes, size_t len)
{
    temp_log log;
    memset(&log, 0, sizeof log);
    io_options opt;
    io_default_options(&opt);
    opt.on_temp = log_temp;
    opt.on_temp_user = &log;
    CHECK(io_write_bytes(tio_path("told.jpg"), bytes, len, &opt, err, sizeof err) == IP_OK, "%s", err);
    CHECK(log.told_made == 1 && log.told_gone == 1, "on_temp: made %d, gone %d", log.told_made, log.told_gone);
    CHECK(log.existed_when_told == 0, "on_temp heard of the temporary after it was created");
    CHECK(log.named_after_pid == 1, "temporary %s does not hold the process id", log.path);
    CHECK(access(log.path, F_OK) != 0, "temporary %s still there", log.path);
}

int main(void)
{
    unsigned char bytes[3000];
    tu_rng rng;
    tu_seed(&rng, 3);
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)tu_next(&rng);
    const char *path = tio_path("encoded.jpg");
    CHECK(io_write_bytes(path, bytes, sizeof bytes, NULL, err, sizeof err) == IP_OK, "%s", err);
    size_t size = 0;
    unsigned char *back = tio_slurp(path, &size);
    CHECK(back && size == sizeof bytes && !memcmp(back, bytes, size), "read back %zu bytes", size);
    free(back);
    /* Replacing an existing file, with fewer bytes. */
    CHECK(io_write_bytes(path, bytes, 10, NULL, err, sizeof err) == IP_OK, "%s", err);
    back = tio_slurp(path, &size);
    CHECK(back && size == 10 && !memcmp(back, bytes, 10), "rewritten: %zu bytes", size);
    free(back);
    CHECK(io_write_bytes(tio_path(""), bytes, 10, NULL, err, sizeof err) == IP_EINVAL, "folder path accepted");
    CHECK(io_write_bytes("/nonexistent-dir/x.jpg", bytes, 10, NULL, err, sizeof err) == IP_EIO && strstr(err, "cannot create"),
          "missing folder: %s", err);
    check_temp_told(bytes, sizeof bytes);
    CHECK(temporaries_left(tu_tmpdir()) == 0, "temporary files left in %s", tu_tmpdir());
    return tu_finish();
}
