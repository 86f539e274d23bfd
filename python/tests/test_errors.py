"""Pipeline text errors carry file, line, column and the suggestion; other failures map to
ValueError, OSError and imgpipe.Error."""
import numpy as np
import pytest

import imgpipe


def test_unknown_stage_line_column():
    with pytest.raises(imgpipe.PipelineError) as caught:
        imgpipe.Pipeline("grayscale | meidan radius=2")
    e = caught.value
    assert isinstance(e, ValueError)
    assert (e.line, e.column) == (1, 13)
    assert e.suggestion == "median"
    assert "meidan" in str(e) and "median" in str(e)


def test_bad_parameter_and_value():
    with pytest.raises(imgpipe.PipelineError) as caught:
        imgpipe.Pipeline("median radius=1 | mean radiys=2")
    assert caught.value.line == 1 and caught.value.column > 18
    assert caught.value.suggestion == "radius"
    with pytest.raises(imgpipe.PipelineError) as caught:
        imgpipe.Pipeline("median radius=1000")
    assert caught.value.line == 1 and "radius" in str(caught.value)


def test_file_error_names_file_and_line(tmp_path):
    path = tmp_path / "broken.pipe"
    path.write_text("# comment\ngrayscale\n  convolve kernel=gausian3\n")
    with pytest.raises(imgpipe.PipelineError) as caught:
        imgpipe.Pipeline.from_file(path)
    e = caught.value
    assert e.file == str(path)
    assert (e.line, e.column) == (3, 19)
    assert e.suggestion == "gaussian3"


def test_missing_pipeline_file(tmp_path):
    with pytest.raises(OSError) as caught:
        imgpipe.Pipeline.from_file(tmp_path / "none.pipe")
    assert "none.pipe" in str(caught.value)


def test_empty_and_bad_text():
    with pytest.raises(imgpipe.PipelineError):
        imgpipe.Pipeline("")
    with pytest.raises(TypeError):
        imgpipe.Pipeline(42)


def test_error_hierarchy():
    assert issubclass(imgpipe.PipelineError, ValueError)
    assert issubclass(imgpipe.Error, RuntimeError)


def test_gpu_asked_where_there_is_none():
    if imgpipe.gpu_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(imgpipe.Error) as caught:
        imgpipe.Pipeline("median radius=1")(np.zeros((8, 8), np.uint8), device="gpu")
    assert caught.value.code is not None
