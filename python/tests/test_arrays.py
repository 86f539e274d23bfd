"""Arrays in: strided and non-contiguous views give the contiguous copy's result; bad arrays say
what is wrong; the result's shape and type."""
import numpy as np
import pytest

import imgpipe
from conftest import random_image

PIPELINES = ["grayscale | median radius=1", "median radius=1 | convolve kernel=gaussian3", "transpose",
             "mean radius=2"]


def views(base):
    """(name, view) pairs of a HxWxC array: none of them C-contiguous."""
    return [
        ("step 2,3", base[::2, ::3]),
        ("column window", base[3:-4, 5:-2]),
        ("transpose", base.transpose(1, 0, 2)),
        ("fortran", np.asfortranarray(base)),
        ("negative rows", base[::-1]),
        ("negative both", base[::-1, ::-2]),
        ("channel subset", base[:, :, :3]),
        ("channel reversed", base[:, :, 2::-1]),
    ]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("text", PIPELINES)
def test_views_equal_contiguous(rng, text, dtype):
    base = random_image(rng, (61, 47, 4), dtype)
    p = imgpipe.Pipeline(text)
    for name, view in views(base):
        if text.startswith("grayscale") and view.shape[2] not in (3, 4):
            continue
        assert not view.flags.c_contiguous, name
        expected = p(np.ascontiguousarray(view), device="cpu")
        np.testing.assert_array_equal(p(view, device="cpu"), expected, err_msg=name)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_two_d_views(rng, dtype):
    base = random_image(rng, (53, 67), dtype)
    p = imgpipe.Pipeline("median radius=1 | mean radius=1")
    for view in (base[::3, ::2], base.T, base[::-1, ::-1], np.asfortranarray(base), base[1:, 1:]):
        np.testing.assert_array_equal(p(view), p(np.ascontiguousarray(view)))


def test_row_stride_taken_in_place(rng):
    """Rows apart (a column window) are read in place, not copied: the result is still right."""
    base = random_image(rng, (40, 64, 3), np.uint8)
    view = base[:, 8:40]
    out = imgpipe.Pipeline("grayscale")(view, device="cpu")
    r, g, b = (view[..., i].astype(np.int64) for i in range(3))
    expected = (r * 9798 + g * 19235 + b * 3735 + 16384) >> 15
    np.testing.assert_array_equal(out, expected.astype(np.uint8))


def test_result_shapes(rng):
    gray = imgpipe.Pipeline("grayscale")
    assert gray(random_image(rng, (5, 7, 3), np.uint8)).shape == (5, 7)
    median = imgpipe.Pipeline("median radius=1")
    assert median(random_image(rng, (5, 7), np.uint8)).shape == (5, 7)
    assert median(random_image(rng, (5, 7, 1), np.uint8)).shape == (5, 7, 1)
    assert median(random_image(rng, (5, 7, 2), np.uint16)).shape == (5, 7, 2)
    assert imgpipe.Pipeline("transpose")(random_image(rng, (5, 7, 4), np.float32)).shape == (7, 5, 4)
    entropy = imgpipe.Pipeline("entropy radius=1")(random_image(rng, (9, 8), np.uint8))
    assert entropy.dtype == np.float32 and entropy.shape == (9, 8)
    assert imgpipe.Pipeline("grayscale").output_shape((5, 7, 3), np.uint16) == (5, 7, 1, "uint16")


def test_result_is_new_and_input_untouched(rng):
    array = random_image(rng, (16, 16), np.uint8)
    before = array.copy()
    out = imgpipe.Pipeline("median radius=1")(array)
    assert out is not array and not np.shares_memory(out, array)
    np.testing.assert_array_equal(array, before)
    assert out.flags.c_contiguous and out.flags.writeable


def test_other_inputs(rng):
    """What numpy.asarray takes (lists, read-only arrays, memoryviews) works too."""
    p = imgpipe.Pipeline("median radius=1")
    array = random_image(rng, (6, 5), np.uint8)
    readonly = array.copy()
    readonly.flags.writeable = False
    np.testing.assert_array_equal(p(readonly), p(array))
    np.testing.assert_array_equal(p(memoryview(array)), p(array))


@pytest.mark.parametrize("array,error,words", [
    (np.zeros((4, 4), np.int16), TypeError, "int16"),
    (np.zeros((4, 4), np.float64), TypeError, "float64"),
    (np.zeros((4, 4), np.int32), TypeError, "int32"),
    (np.zeros((4, 4), bool), TypeError, "bool"),
    (np.zeros((4, 4), ">u2"), TypeError, "byte-swapped"),
    (np.zeros((4, 4, 5), np.uint8), ValueError, "5"),
    (np.zeros((2, 4, 4, 3), np.uint8), ValueError, "4-D"),
    (np.zeros(16, np.uint8), ValueError, "1-D"),
    (np.zeros((0, 4), np.uint8), ValueError, "shape (0, 4)"),
    (np.zeros((4, 4, 0), np.uint8), ValueError, "0"),
])
def test_bad_arrays(array, error, words):
    with pytest.raises(error) as caught:
        imgpipe.Pipeline("median radius=1")(array)
    assert words in str(caught.value)


def test_bad_input_types():
    p = imgpipe.Pipeline("median radius=1")
    with pytest.raises(TypeError, match="int64"):
        p([[1, 2], [3, 4]])
    with pytest.raises((TypeError, ValueError)):
        p("not an image")
    with pytest.raises(ValueError, match="device"):
        p(np.zeros((4, 4), np.uint8), device="tpu")
    with pytest.raises(TypeError, match="stream"):
        p(np.zeros((4, 4), np.uint8), stream="fast")


def test_image_the_pipeline_cannot_take(rng):
    """The library refuses a shape or type the stages cannot take, as a ValueError."""
    with pytest.raises(ValueError, match="entropy"):
        imgpipe.Pipeline("entropy radius=1")(random_image(rng, (8, 8, 3), np.uint8))
