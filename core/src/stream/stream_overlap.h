/* Decoding and encoding of a streamed run on threads of their own, beside the stages: one thread
 * pulls the source's bands into a bounded queue ahead of the stages, another hands the stages'
 * rows from a bounded queue to the sink, so band k+1 is decoded while band k is processed and
 * band k-1 encoded. Rows are copied into the queues' slots: the source's rows and the rows a
 * band_sink gets are only valid during a call; a source with next_into decodes into its slots
 * instead. The first error of any thread stops the others. */
#ifndef IMGPIPE_STREAM_OVERLAP_H
#define IMGPIPE_STREAM_OVERLAP_H
#include "stream/stream.h"

typedef struct stream_overlap stream_overlap;

typedef struct {
    int slots;               /* bands each queue holds, the one in use included (>= 2) */
    ip_shape sink_shape;     /* the rows the sink takes (width, channels, sample type) */
    int sink_rows;           /* rows gathered into a sink slot before it goes to the encoder (>= 1) */
    double *source_ms;       /* time in the source (next and its copy, or next_into), added up on the decoding
                                thread */
    double *sink_ms;         /* time in sink->rows, added up on the encoding thread */
} stream_overlap_options;

/* Starts both threads. src and sink must stay valid until stream_overlap_finish. */
int stream_overlap_start(stream_overlap **out, const stream_source *src, const band_sink *sink,
                         const stream_overlap_options *o, char *err, size_t errlen);
/* The source's bands, from the queue: on the calling thread only. */
stream_source stream_overlap_source(stream_overlap *ov);
/* Rows for the sink, into the queue: on the calling thread only, in order. */
band_sink stream_overlap_sink(stream_overlap *ov);
/* Ends the run. rc: the calling thread's outcome (its message in err). With IP_OK the rows still
 * queued go to the sink first; otherwise both threads stop after the call they are in. Returns the
 * first error any thread met (its message in err), else IP_OK. Frees ov. */
int stream_overlap_finish(stream_overlap *ov, int rc, char *err, size_t errlen);
#endif
