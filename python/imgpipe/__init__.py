"""imgpipe from Python: run imgpipe pipelines on numpy arrays, files, folders and GPU arrays.

    import imgpipe
    p = imgpipe.Pipeline("grayscale | median radius=1")
    out = p(array)                          # numpy in, numpy out (uint8, uint16, float32)
    p.run_file("in.tif", "out.png")
    imgpipe.run_folder(p, "photos/", "clean/", progress=lambda done, total: ...)

CuPy arrays, PyTorch tensors and anything with __cuda_array_interface__ or DLPack on a CUDA
device run on that GPU without a copy, on the caller's stream, and come back as a DeviceArray
(cupy.asarray, cupy.from_dlpack and torch.from_dlpack take it as it is).
"""
import errno as _errno
import os as _os
from collections import namedtuple as _namedtuple

import numpy as _np

from . import _imgpipe

__all__ = ["Pipeline", "PipelineError", "Error", "DeviceArray", "FolderResult", "Stage", "Param",
           "run_folder", "stages", "stage", "version", "gpu_available"]

DeviceArray = _imgpipe.DeviceArray


class Error(RuntimeError):
    """A run failed (a GPU error, a folder with failed images, ...); .code is the imgpipe_status."""

    code = None


class PipelineError(ValueError):
    """An error in a pipeline's text: .file ("<text>" or the path), .line and .column (1-based),
    .suggestion (a misspelt name's likely meaning, or None)."""

    def __init__(self, message, file=None, line=0, column=0, suggestion=None):
        super().__init__(message)
        self.file = file
        self.line = line
        self.column = column
        self.suggestion = suggestion


Stage = _namedtuple("Stage", "name summary has_gpu params")
Param = _namedtuple("Param", "name type default choices help")
FolderResult = _namedtuple("FolderResult", "total done failed")


def _stream_value(stream):
    """A stream as an int cudaStream_t: an int, or a CuPy (.ptr) or PyTorch (.cuda_stream) stream."""
    if stream is None or isinstance(stream, int):
        return stream
    for attribute in ("ptr", "cuda_stream"):
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value
    raise TypeError(f"stream must be an int, a cupy.cuda.Stream or a torch.cuda.Stream, not {type(stream).__name__}")


def _current_stream(array):
    """The current stream of the library an array comes from (CuPy, PyTorch), or None."""
    library = type(array).__module__.partition(".")[0]
    if library == "cupy":
        import cupy
        with cupy.cuda.Device(array.device.id):
            return cupy.cuda.get_current_stream().ptr
    if library == "torch":
        import torch
        return torch.cuda.current_stream(array.device).cuda_stream
    return None


_imgpipe._setup(PipelineError, Error, _np.empty, _np.asarray, _np.ndarray, _current_stream)

# The plugins travel inside the package; $IMGPIPE_PLUGIN_PATH and set_plugin_path() come first.
_PLUGINS = _os.path.join(_os.path.dirname(__file__), "plugins")
_imgpipe.set_plugin_path(_os.pathsep.join(p for p in (_os.environ.get("IMGPIPE_PLUGIN_PATH"), _PLUGINS) if p))


def _options(device="auto", threads=0, gpu=0, **files):
    options = {"device": device, "threads": threads, "gpu": gpu}
    for key, value in files.items():
        if value is not None:
            options[key] = value
    return options


class Pipeline:
    """An imgpipe pipeline, opened once and run many times (from several threads at once).

    Pipeline("grayscale | median radius=1") takes pipeline text; Pipeline.from_file(path) reads
    a .pipe file. Errors in the text raise PipelineError with .line and .column.
    """

    __slots__ = ("_c", "source")

    def __init__(self, text):
        self._c = _imgpipe.Pipeline(text, False)
        self.source = text

    @classmethod
    def from_file(cls, path):
        """Opens a pipeline file (.pipe): errors name the file, line and column."""
        self = cls.__new__(cls)
        self._c = _imgpipe.Pipeline(_os.fspath(path), True)
        self.source = _os.fspath(path)
        return self

    def __repr__(self):
        return f"imgpipe.Pipeline({self.source!r})"

    def __call__(self, image, *, device="auto", threads=0, gpu=0, stream=None):
        """Runs the pipeline on an image and returns the result.

        image: a numpy array (or anything numpy.asarray takes) of uint8, uint16 or float32,
        HxW or HxWxC with C from 1 to 4, any strides; or a CUDA array (CuPy, PyTorch, anything
        with __cuda_array_interface__ or DLPack), run on its GPU without a copy.
        Returns a new numpy array for host input (HxW when the result has one channel, unless
        the input was HxWx1), a DeviceArray for device input.
        device: "auto" (as the command line decides), "cpu" or "gpu"; threads: CPU threads (0:
        all cores); gpu: which GPU for host input; stream: for device input, the CUDA stream
        to run on (an int, a cupy.cuda.Stream or a torch.cuda.Stream; default: the array's
        library's current stream).
        """
        return self._c.run(image, device, threads, gpu, None if stream is None else _stream_value(stream))

    def output_shape(self, shape, dtype):
        """The result's (height, width, channels, dtype) for an input of that shape and dtype."""
        height, width = shape[0], shape[1]
        channels = shape[2] if len(shape) == 3 else 1
        sample = {"uint8": 1, "uint16": 2, "float32": 3}[_np.dtype(dtype).name]
        return self._c.output_shape(height, width, channels, sample)

    def run_file(self, src, dst, *, device="auto", threads=0, gpu=0, png_level=None, jpeg_quality=None,
                 tiff_compression=None, memory=None):
        """One file to another, as `imgpipe run PIPE SRC DST`: the format from dst's extension,
        written atomically. Raises OSError for a file that cannot be read or written."""
        options = _options(device, threads, gpu, png_level=png_level, jpeg_quality=jpeg_quality,
                           tiff_compression=tiff_compression, memory=memory)
        self._c.run_file(_os.fspath(src), _os.fspath(dst), options)


def _progress_function(progress):
    """progress: None, f(done, total), or a tqdm-like bar (.update, .total)."""
    if progress is None or not hasattr(progress, "update") or callable(progress):
        return progress
    bar = progress

    def update(done, total):
        if bar.total != total:
            bar.total = total
            bar.refresh()
        bar.update(done - bar.n)
    return update


def run_folder(pipeline, src, dst, *, progress=None, device="auto", threads=0, gpu=0, jobs=0, recursive=False,
               output_format=None, png_level=None, jpeg_quality=None, tiff_compression=None, memory=None):
    """Every image in src (PNG, JPEG, TIFF) through the pipeline into dst, as
    `imgpipe run PIPE SRC DST`: several images in flight (jobs), outputs written atomically.

    pipeline: a Pipeline, or pipeline text. progress: f(done, total), called on this thread after
    each image (done counts failed images too; the workers wait for each call, so keep it quick),
    or a tqdm bar (its total is set). Ctrl-C, or an exception raised by progress, stops the run
    before another image is taken, once the images in flight are done, and is then raised. Returns FolderResult(total, done, failed); raises Error when some images failed
    (.result holds the counts, the message is the last failure's).
    """
    if not isinstance(pipeline, Pipeline):
        pipeline = Pipeline(pipeline)
    src, dst = _os.fspath(src), _os.fspath(dst)
    if not str(src).startswith("@") and not _os.path.isdir(src):
        missing = not _os.path.exists(src)
        error = FileNotFoundError if missing else NotADirectoryError
        raise error(_errno.ENOENT if missing else _errno.ENOTDIR,
                    "no such folder" if missing else "not a folder (run_file takes one image)", src)
    options = _options(device, threads, gpu, jobs=jobs, recursive=recursive, output_format=output_format,
                       png_level=png_level, jpeg_quality=jpeg_quality, tiff_compression=tiff_compression,
                       memory=memory)
    counts, failure = pipeline._c.run_folder(src, dst, options,
                                             _progress_function(progress))
    result = FolderResult(*counts)
    if failure is not None:
        error = Error(f"{result.failed} of {result.total} images failed; the last: {failure}")
        error.result = result
        raise error
    return result


def stages():
    """The stages the plugins offer, as Stage(name, summary, has_gpu, params) tuples."""
    return [_stage(info) for info in _imgpipe.stages()]


def stage(name):
    """One stage's Stage(name, summary, has_gpu, params), params as Param(name, type, default,
    choices, help) tuples. An unknown name raises PipelineError with a suggestion."""
    return _stage(_imgpipe.stage(name))


def _stage(info):
    name, summary, has_gpu, params = info
    return Stage(name, summary, has_gpu, [Param(*p) for p in params])


def version():
    """The library's version, "0.1.0"."""
    return _imgpipe.version()


def gpu_available():
    """Whether a GPU can run stages here (a driver, a device, and a build with CUDA)."""
    return _imgpipe.gpu_available()


def set_plugin_path(dirs):
    """Folders (a list, or an os.pathsep-separated str) searched for plugins before the package's
    own; call before the first pipeline is opened."""
    if not isinstance(dirs, str):
        dirs = _os.pathsep.join(_os.fspath(d) for d in dirs)
    _imgpipe.set_plugin_path(_os.pathsep.join((dirs, _PLUGINS)))
