/* Arrays to imgpipe images: host memory through the buffer protocol (numpy), device memory
 * through __cuda_array_interface__ or DLPack. */
#ifndef IMGPIPE_PY_ARRAYS_H
#define IMGPIPE_PY_ARRAYS_H
#include "ext.h"
#include "dlpack.h"

/* The image's layout as an array: dims and byte strides (negative ones included). */
typedef struct {
    int ndim;                   /* 2 or 3 */
    Py_ssize_t shape[3];
    Py_ssize_t strides[3];      /* bytes */
} array_layout;

/* Checks ndim, channels and size, and fills the image's width, height and channels. -1 with
 * a ValueError naming what is wrong. */
int layout_check(const array_layout *a, imgpipe_image *img);
/* Whether the API takes the layout as it is (pixels packed, rows at a positive stride); sets
 * img->stride. */
int layout_fits(const array_layout *a, const void *data, imgpipe_image *img);

typedef struct {
    Py_buffer view;
    int held;
    array_layout layout;
    const char *first;          /* the element at [0, 0, 0] */
    void *packed;               /* a packed copy, when the strides do not fit */
    imgpipe_image img;
} host_input;

/* Borrows obj's buffer; -1 with TypeError or ValueError saying what is wrong with it. */
int host_input_open(host_input *in, PyObject *obj);
/* Makes the packed copy when one is needed; runs without the GIL. IMGPIPE_ENOMEM or OK. */
int host_input_pack(host_input *in);
void host_input_close(host_input *in);

typedef struct {
    imgpipe_image img;
    int ndim;
    void *stream;               /* the run's stream */
    PyObject *capsule;          /* a consumed DLPack capsule, its tensor deleted on close */
    DLManagedTensor *managed;
} device_input;

/* For an object on a CUDA device (__cuda_array_interface__, or DLPack on kDLCUDA): fills in and
 * returns 1; 0 when obj is not a device array; -1 with an exception. stream: None (the array's
 * library's current stream, else the array's own) or an int cudaStream_t. */
int device_input_open(ext_state *st, device_input *in, PyObject *obj, PyObject *stream);
void device_input_close(device_input *in);

/* Parsed sample types from numpy's buffer format and the interface's typestr. */
int sample_of_format(const char *format, Py_ssize_t itemsize, imgpipe_sample *s);
int sample_of_typestr(const char *typestr, imgpipe_sample *s);
int sample_of_dltype(DLDataType t, imgpipe_sample *s);

/* The CUDA runtime, as loaded by libimgpipe (or by CuPy or PyTorch): NULL when none is. */
int cuda_stream_wait(void *waiter, void *producer, int device, char *err, size_t errlen);
int cuda_pointer_device(const void *ptr, int *device);

#endif
