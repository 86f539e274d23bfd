/* imgpipe._imgpipe.Pipeline: an open pipeline; __init__.py's Pipeline wraps it. Safe to run
 * from several threads at once (the library's pipeline is). */
#include "ext.h"

typedef struct {
    PyObject_HEAD
    imgpipe_pipeline *p;
} pipeline_obj;

static PyObject *pipeline_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"source", "is_file", NULL};
    ext_state *st = ext_state_of_type(type);
    PyObject *source, *encoded = NULL;
    int is_file = 0, code;
    imgpipe_error err = {0};
    imgpipe_pipeline *p = NULL;
    pipeline_obj *self;
    if (!st || !PyArg_ParseTupleAndKeywords(args, kwargs, "Op:Pipeline", names, &source, &is_file))
        return NULL;
    if (is_file) {
        if (!PyUnicode_FSConverter(source, &encoded))
            return NULL;
        code = imgpipe_pipeline_from_file(&p, PyBytes_AsString(encoded), &err);
        Py_DECREF(encoded);
    } else {
        const char *text = PyUnicode_Check(source) ? PyUnicode_AsUTF8AndSize(source, NULL) : NULL;
        if (!text) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "a pipeline is a str, not %R", Py_TYPE(source));
            return NULL;
        }
        code = imgpipe_pipeline_from_text(&p, text, &err);
    }
    if (code != IMGPIPE_OK)
        return ext_raise(st, code, &err);
    self = (pipeline_obj *)((allocfunc)PyType_GetSlot(type, Py_tp_alloc))(type, 0);
    if (!self) {
        imgpipe_pipeline_close(p);
        return NULL;
    }
    self->p = p;
    return (PyObject *)self;
}

static void pipeline_dealloc(PyObject *obj)
{
    PyTypeObject *type = Py_TYPE(obj);
    imgpipe_pipeline_close(((pipeline_obj *)obj)->p);
    ((freefunc)PyType_GetSlot(type, Py_tp_free))(obj);
    Py_DECREF(type);
}

static PyObject *pipeline_run(PyObject *obj, PyObject *args)
{
    ext_state *st = ext_state_of_type(Py_TYPE(obj));
    PyObject *array, *device, *stream;
    int threads, gpu;
    imgpipe_run_options o;
    if (!PyArg_ParseTuple(args, "OOiiO:run", &array, &device, &threads, &gpu, &stream))
        return NULL;
    imgpipe_run_options_init(&o);
    if (ext_device_of(device, &o.device) < 0)
        return NULL;
    if (threads < 0 || gpu < 0) {
        PyErr_SetString(PyExc_ValueError, "threads and gpu are 0 or more");
        return NULL;
    }
    o.threads = threads;
    o.gpu = gpu;
    return run_array(st, ((pipeline_obj *)obj)->p, array, &o, stream);
}

/* Two paths as file-system bytes. */
static int two_paths(PyObject *a, PyObject *b, PyObject **pa, PyObject **pb)
{
    *pa = *pb = NULL;
    if (!PyUnicode_FSConverter(a, pa) || !PyUnicode_FSConverter(b, pb)) {
        Py_CLEAR(*pa);
        return -1;
    }
    return 0;
}

static PyObject *pipeline_run_file(PyObject *obj, PyObject *args)
{
    ext_state *st = ext_state_of_type(Py_TYPE(obj));
    PyObject *src, *dst, *options, *bsrc, *bdst;
    imgpipe_run_options o;
    imgpipe_error err = {0};
    int code;
    if (!PyArg_ParseTuple(args, "OOO:run_file", &src, &dst, &options) || ext_options(options, &o) < 0 ||
        two_paths(src, dst, &bsrc, &bdst) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    code = imgpipe_run_file(((pipeline_obj *)obj)->p, PyBytes_AsString(bsrc), PyBytes_AsString(bdst), &o, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(bsrc);
    Py_DECREF(bdst);
    if (code != IMGPIPE_OK)
        return ext_raise(st, code, &err);
    Py_RETURN_NONE;
}

static PyObject *pipeline_run_folder(PyObject *obj, PyObject *args)
{
    ext_state *st = ext_state_of_type(Py_TYPE(obj));
    PyObject *src, *dst, *options, *progress, *bsrc, *bdst, *result;
    imgpipe_run_options o;
    if (!PyArg_ParseTuple(args, "OOOO:run_folder", &src, &dst, &options, &progress) ||
        ext_options(options, &o) < 0 || two_paths(src, dst, &bsrc, &bdst) < 0)
        return NULL;
    result = run_folder(st, ((pipeline_obj *)obj)->p, PyBytes_AsString(bsrc), PyBytes_AsString(bdst), &o, progress);
    Py_DECREF(bsrc);
    Py_DECREF(bdst);
    return result;
}

static PyObject *pipeline_output_shape(PyObject *obj, PyObject *args)
{
    ext_state *st = ext_state_of_type(Py_TYPE(obj));
    imgpipe_image in = {0}, out = {0};
    imgpipe_error err = {0};
    int sample, code;
    if (!PyArg_ParseTuple(args, "iiii:output_shape", &in.height, &in.width, &in.channels, &sample))
        return NULL;
    in.sample = (imgpipe_sample)sample;
    code = imgpipe_output_shape(((pipeline_obj *)obj)->p, &in, &out, &err);
    if (code != IMGPIPE_OK)
        return ext_raise(st, code, &err);
    return Py_BuildValue("(iiis)", out.height, out.width, out.channels, ext_dtype_name(out.sample));
}

static PyMethodDef methods[] = {
    {"run", pipeline_run, METH_VARARGS, "run(array, device, threads, gpu, stream)"},
    {"run_file", pipeline_run_file, METH_VARARGS, "run_file(src, dst, options)"},
    {"run_folder", pipeline_run_folder, METH_VARARGS,
     "run_folder(src, dst, options, progress) -> ((total, done, failed), last failure or None)"},
    {"output_shape", pipeline_output_shape, METH_VARARGS,
     "output_shape(height, width, channels, sample) -> (height, width, channels, dtype)"},
    {NULL, NULL, 0, NULL}};

PyTypeObject *pipeline_type_create(PyObject *module)
{
    PyType_Slot slots[] = {
        {Py_tp_new, pipeline_new},
        {Py_tp_dealloc, pipeline_dealloc},
        {Py_tp_methods, methods},
        {Py_tp_doc, "Pipeline(source, is_file): an open imgpipe pipeline (use imgpipe.Pipeline)."},
        {0, NULL}};
    PyType_Spec spec = {"imgpipe._imgpipe.Pipeline", sizeof(pipeline_obj), 0, Py_TPFLAGS_DEFAULT, slots};
    return (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, NULL);
}
