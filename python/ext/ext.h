/* imgpipe._imgpipe, CPython's stable ABI (3.11): what the extension's files share. */
#ifndef IMGPIPE_PY_EXT_H
#define IMGPIPE_PY_EXT_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <imgpipe/imgpipe.h>

/* The module's state: what __init__.py hands over in _setup, and the types. */
typedef struct {
    PyObject *pipeline_error;   /* imgpipe.PipelineError(message, file, line, column, suggestion) */
    PyObject *error;            /* imgpipe.Error (RuntimeError) */
    PyObject *np_empty;         /* numpy.empty */
    PyObject *np_asarray;       /* numpy.asarray, for inputs without the buffer protocol */
    PyObject *np_ndarray;       /* numpy.ndarray: host memory, asked nothing else */
    PyObject *default_stream;   /* f(array) -> int or None: the array's library's current stream */
    PyTypeObject *pipeline_type;
    PyTypeObject *device_array_type;
} ext_state;

ext_state *ext_state_of_type(PyTypeObject *type);

/* Sets the Python exception an imgpipe error maps to; returns NULL. */
PyObject *ext_raise(ext_state *st, int code, const imgpipe_error *err);

/* Fills run options from a dict of keyword options (missing keys: defaults). The strings stay
 * valid while the dict lives. -1 with an exception on a bad value. */
int ext_options(PyObject *dict, imgpipe_run_options *o);
int ext_device_of(PyObject *name, imgpipe_device *device);

/* Sample types: the numpy dtype name and the size of one sample. */
const char *ext_dtype_name(imgpipe_sample s);
size_t ext_sample_size(imgpipe_sample s);

/* The result's dimensions: HxW for one channel unless the input was HxWx1. */
int ext_result_ndim(int in_ndim, int in_channels, int out_channels);

/* Types (created in the module's exec). */
PyTypeObject *pipeline_type_create(PyObject *module);
PyTypeObject *device_array_type_create(PyObject *module);

/* A result on a CUDA device: takes img (allocated by the library, freed with the object). */
PyObject *device_array_wrap(ext_state *st, const imgpipe_image *img, int ndim, void *stream);

/* Runs one array through p: a numpy result for host input, a DeviceArray for device input. */
PyObject *run_array(ext_state *st, imgpipe_pipeline *p, PyObject *array, const imgpipe_run_options *o,
                    PyObject *stream);

/* A folder run: progress(done, total) called on this thread; a signal or an exception in the
 * callback cancels the run, and is raised once it has stopped. */
PyObject *run_folder(ext_state *st, imgpipe_pipeline *p, const char *src, const char *dst,
                     const imgpipe_run_options *o, PyObject *progress);

#endif
