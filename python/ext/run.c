/* One array through a pipeline: host arrays into a new numpy array, device arrays into a
 * DeviceArray on the same device. The GIL is released while the pipeline runs. */
#include "arrays.h"

/* Below this many pixels a run takes microseconds: keeping the GIL costs other threads less than
 * giving it up and taking it back, which waits on whichever thread holds it then. */
#define GIL_KEPT_BELOW_PIXELS 65536

static PyObject *new_numpy(ext_state *st, const imgpipe_image *shape, int ndim)
{
    PyObject *dims = ndim == 2 ? Py_BuildValue("(ii)", shape->height, shape->width)
                               : Py_BuildValue("(iii)", shape->height, shape->width, shape->channels);
    PyObject *result;
    if (!dims)
        return NULL;
    result = PyObject_CallFunction(st->np_empty, "Os", dims, ext_dtype_name(shape->sample));
    Py_DECREF(dims);
    return result;
}

static PyObject *run_host(ext_state *st, imgpipe_pipeline *p, PyObject *array, const imgpipe_run_options *o)
{
    host_input in;
    imgpipe_image out = {0};
    imgpipe_error err = {0};
    Py_buffer view;
    PyObject *result;
    int code;
    if (host_input_open(&in, array) < 0)
        return NULL;
    code = imgpipe_output_shape(p, &in.img, &out, &err);
    if (code != IMGPIPE_OK) {
        host_input_close(&in);
        return ext_raise(st, code, &err);
    }
    result = new_numpy(st, &out, ext_result_ndim(in.layout.ndim, in.img.channels, out.channels));
    if (!result || PyObject_GetBuffer(result, &view, PyBUF_CONTIG) < 0) {
        host_input_close(&in);
        Py_XDECREF(result);
        return NULL;
    }
    out.data = view.buf;
    out.stride = 0;
    out.memory = IMGPIPE_HOST;
    if ((long long)in.img.width * in.img.height < GIL_KEPT_BELOW_PIXELS) {
        code = host_input_pack(&in);
        if (code == IMGPIPE_OK)
            code = imgpipe_run(p, &in.img, &out, o, NULL, &err);
    } else {
        Py_BEGIN_ALLOW_THREADS
        code = host_input_pack(&in);
        if (code == IMGPIPE_OK)
            code = imgpipe_run(p, &in.img, &out, o, NULL, &err);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    host_input_close(&in);
    if (code != IMGPIPE_OK) {
        Py_DECREF(result);
        return ext_raise(st, code, &err);
    }
    return result;
}

static PyObject *run_device(ext_state *st, imgpipe_pipeline *p, device_input *in, const imgpipe_run_options *o)
{
    imgpipe_image out = {0};
    imgpipe_error err = {0};
    int code;
    out.memory = IMGPIPE_CUDA_DEVICE;
    out.device = in->img.device;
    Py_BEGIN_ALLOW_THREADS
    code = imgpipe_run(p, &in->img, &out, o, in->stream, &err);
    Py_END_ALLOW_THREADS
    if (code != IMGPIPE_OK)
        return ext_raise(st, code, &err);
    return device_array_wrap(st, &out, ext_result_ndim(in->ndim, in->img.channels, out.channels), in->stream);
}

PyObject *run_array(ext_state *st, imgpipe_pipeline *p, PyObject *array, const imgpipe_run_options *o,
                    PyObject *stream)
{
    device_input din;
    PyObject *result, *converted;
    int found;
    /* numpy's arrays (the common call) are host memory: no device interface asked of them */
    if (Py_TYPE(array) == (PyTypeObject *)st->np_ndarray)
        return run_host(st, p, array, o);
    /* Device arrays first: CuPy's arrays also offer the buffer protocol, which then refuses */
    found = device_input_open(st, &din, array, stream);
    if (found != 0) {
        result = found > 0 ? run_device(st, p, &din, o) : NULL;
        device_input_close(&din);
        return result;
    }
    if (PyObject_CheckBuffer(array))
        return run_host(st, p, array, o);
    converted = PyObject_CallFunctionObjArgs(st->np_asarray, array, NULL);   /* lists, CPU tensors, PIL */
    if (!converted)
        return NULL;
    result = PyObject_CheckBuffer(converted) ? run_host(st, p, converted, o) : NULL;
    if (!result && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "imgpipe takes arrays, not %R", Py_TYPE(array));
    Py_DECREF(converted);
    return result;
}
