/* io_write_bytes: encoded bytes land whole at the path through a temporary file; failures leave
 * neither the file nor the temporary; the temp slot names the temporary (for a signal handler
 * that removes it) and is cleared when it is gone. */
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

/* The slot names the temporary while it exists, and is cleared once the file is in place. */
static void check_temp_slot(const unsigned char *bytes, size_t len)
{
    io_temp_slot slot;
    memset(&slot, 0, sizeof slot);
    io_options opt;
    io_default_options(&opt);
    opt.temp_slot = &slot;
    char pid[32];
    snprintf(pid, sizeof pid, "-%ld-", (long)getpid());
    CHECK(io_write_bytes(tio_path("told.jpg"), bytes, len, &opt, err, sizeof err) == IP_OK, "%s", err);
    CHECK(slot.set == 0, "the slot still names a temporary after the write");
    CHECK(strstr(slot.path, ".imgpipe-tmp-") && strstr(slot.path, pid), "temporary '%s' was not named, with the process id",
          slot.path);
    CHECK(access(slot.path, F_OK) != 0, "temporary %s still there", slot.path);
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
    check_temp_slot(bytes, sizeof bytes);
    CHECK(temporaries_left(tu_tmpdir()) == 0, "temporary files left in %s", tu_tmpdir());
    return tu_finish();
}
