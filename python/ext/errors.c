/* imgpipe errors to Python exceptions: pipeline text errors to PipelineError (a ValueError)
 * with file, line, column and suggestion; files to OSError; bad arguments to ValueError; the
 * rest to imgpipe.Error (a RuntimeError) with its code. */
#include "ext.h"

static PyObject *text_or_none(const char *s)
{
    if (s && s[0])
        return PyUnicode_DecodeFSDefault(s);
    Py_RETURN_NONE;
}

static void raise_instance(PyObject *type, PyObject *exc)
{
    if (exc) {
        PyErr_SetObject(type, exc);
        Py_DECREF(exc);
    }
}

static void raise_pipeline_error(ext_state *st, const imgpipe_error *e)
{
    PyObject *exc = PyObject_CallFunction(st->pipeline_error, "sNiiN", e->message, text_or_none(e->file),
                                          e->line, e->column, text_or_none(e->suggestion));
    raise_instance(st->pipeline_error, exc);
}

static void raise_os_error(const imgpipe_error *e)
{
    PyObject *exc = PyObject_CallFunction(PyExc_OSError, "s", e->message);
    PyObject *path = text_or_none(e->path);
    if (exc && path && path != Py_None && PyObject_SetAttrString(exc, "filename", path) < 0)
        Py_CLEAR(exc);
    Py_XDECREF(path);
    raise_instance(PyExc_OSError, exc);
}

static void raise_error(ext_state *st, int code, const char *message)
{
    PyObject *exc = PyObject_CallFunction(st->error, "s", message);
    PyObject *value = PyLong_FromLong(code);
    if (exc && value && PyObject_SetAttrString(exc, "code", value) < 0)
        Py_CLEAR(exc);
    Py_XDECREF(value);
    raise_instance(st->error, exc);
}

PyObject *ext_raise(ext_state *st, int code, const imgpipe_error *err)
{
    const char *message = err->message[0] ? err->message : imgpipe_status_text(code);
    switch (code) {
    case IMGPIPE_EPIPELINE:
        raise_pipeline_error(st, err);
        break;
    case IMGPIPE_EIO:
    case IMGPIPE_EFORMAT:
        raise_os_error(err);
        break;
    case IMGPIPE_ENOMEM:
        PyErr_SetString(PyExc_MemoryError, message);
        break;
    case IMGPIPE_EINVAL:
        if (err->suggestion[0]) {   /* a misspelt name (a stage's): its likely meaning goes with it */
            raise_pipeline_error(st, err);
            break;
        }
        PyErr_SetString(PyExc_ValueError, message);
        break;
    case IMGPIPE_ELIMIT:
        PyErr_SetString(PyExc_ValueError, message);
        break;
    default:
        raise_error(st, code, message);
    }
    return NULL;
}
