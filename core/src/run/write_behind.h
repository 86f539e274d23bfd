/* A folder worker's output written behind its next image: the worker hands over a result left on
 * its GPU and goes on decoding the next file on its core while a thread of its own encodes and
 * writes the last (the card's deflate or nvJPEG's encoding mostly waits on the device). One write
 * at a time: the worker waits for it before its GPU objects or result buffers are used again. */
#ifndef IMGPIPE_WRITE_BEHIND_H
#define IMGPIPE_WRITE_BEHIND_H
#include "io/codec_gpu.h"
#include "run/run.h"

typedef struct write_behind write_behind;

/* What one write needs, owned by the job once handed over (meta and path are taken, not copied). */
typedef struct {
    ip_image result;                 /* on the device, in the worker's context until the write ends */
    char *path;                      /* malloc'd */
    run_options o;
    io_meta meta;
    jpeg_gpu *jpeg;
    const io_gpu_codecs *codecs;
    void (*on_written)(void *user, int rc, double encode_ms, const char *err);
    void *on_written_user;
} write_behind_job;

/* IP_OK, or IP_ENOMEM / IP_EINVAL (no thread): the caller writes in line. */
int write_behind_create(write_behind **wb, int device, char *err, size_t errlen);
/* Waits for the write before it (and its on_written), then hands job over: from here the job is
 * the thread's, on success or not. */
void write_behind_submit(write_behind *wb, write_behind_job *job);
/* Returns once no write is pending (its on_written called): the ms it waited. */
double write_behind_wait(write_behind *wb);
/* Waits, then ends the thread. NULL is fine. */
void write_behind_destroy(write_behind *wb);
/* IMGPIPE_WRITE_BEHIND=0 turns it off (writes in line, as before), for measuring. */
int write_behind_wanted(void);
#endif
