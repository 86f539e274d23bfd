"""Every stage, and chains, on numpy input give what the command line gives for the same image
written as a TIFF (CPU path on both sides)."""
import numpy as np
import pytest

import imgpipe
from conftest import random_image

# (pipeline, shape, dtype): odd and prime sizes; each stage at each sample type it takes
CASES = [
    ("grayscale", (37, 53, 3), np.uint8),
    ("grayscale weights=bt709", (31, 29, 4), np.uint8),
    ("grayscale", (23, 41, 3), np.uint16),
    ("grayscale weights=average", (19, 17, 3), np.float32),
    ("median radius=1", (37, 53), np.uint8),
    ("median radius=2 border=reflect101", (29, 31, 3), np.uint8),
    ("median radius=1", (13, 61), np.uint16),
    ("median radius=1 border=zero", (17, 19), np.float32),
    ("mean radius=1", (37, 53), np.uint8),
    ("mean radius=3 border=shrink", (41, 23, 3), np.uint16),
    ("mean radius=2", (11, 67), np.float32),
    ("convolve kernel=gaussian3", (37, 53), np.uint8),
    ("convolve kernel=sobel-x output=f32", (29, 31), np.uint8),
    ("convolve kernel=\"1 2 1; 0 0 0; -1 -2 -1\" border=replicate", (19, 43, 3), np.uint16),
    ("convolve kernel=sharpen", (23, 17), np.float32),
    ("entropy radius=2", (37, 53), np.uint8),
    ("entropy radius=1 bins=16 output=u8", (31, 47), np.uint8),
    ("transpose", (37, 53, 3), np.uint8),
    ("transpose", (1, 29), np.uint16),
    ("transpose", (13, 7), np.float32),
    ("grayscale | median radius=1 | convolve kernel=gaussian3", (61, 59, 3), np.uint8),
    ("grayscale | entropy radius=2 bins=16 output=u8", (43, 37, 3), np.uint8),
    ("median radius=1 | transpose | mean radius=1", (29, 37, 4), np.uint8),
    ("convolve kernel=emboss | median radius=1", (1, 1), np.uint8),
]


@pytest.mark.parametrize("text,shape,dtype", CASES, ids=[f"{c[0]}-{c[2].__name__}-{c[1]}" for c in CASES])
def test_stage_equals_cli(run_cli, rng, text, shape, dtype):
    array = random_image(rng, shape, dtype)
    ours = imgpipe.Pipeline(text)(array, device="cpu")
    theirs = run_cli(text, array)
    assert ours.dtype == theirs.dtype
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    np.testing.assert_array_equal(ours, theirs)


def test_histogram_equals_cli(cli, run_cli, rng, tmp_path):
    array = random_image(rng, (37, 53, 3), np.uint8)
    ours_csv, theirs_csv = tmp_path / "ours.csv", tmp_path / "theirs.csv"
    ours = imgpipe.Pipeline(f"histogram bins=16 out={ours_csv}")(array, device="cpu")
    theirs = run_cli(f"histogram bins=16 out={theirs_csv}", array)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours, array)
    assert ours_csv.read_text() == theirs_csv.read_text()


def test_every_stage_is_covered():
    covered = {part.split()[0] for case in CASES for part in case[0].split("|")} | {"histogram"}
    builtin = {"grayscale", "histogram", "median", "mean", "convolve", "entropy", "transpose"}
    assert builtin <= {s.name for s in imgpipe.stages()}
    assert builtin <= covered


def test_pipeline_file_equals_text(run_cli, rng, tmp_path):
    path = tmp_path / "denoise.pipe"
    path.write_text("# a comment\ngrayscale\nmedian radius=1   # 3x3\nconvolve kernel=gaussian3\n")
    array = random_image(rng, (47, 31, 3), np.uint8)
    from_file = imgpipe.Pipeline.from_file(path)(array, device="cpu")
    from_text = imgpipe.Pipeline("grayscale | median radius=1 | convolve kernel=gaussian3")(array)
    np.testing.assert_array_equal(from_file, from_text)
    np.testing.assert_array_equal(from_file, run_cli("grayscale | median radius=1 | convolve kernel=gaussian3", array))
