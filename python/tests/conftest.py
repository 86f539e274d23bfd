"""Shared fixtures: the command line to compare with, images, fixed-seed random arrays."""
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cli_path():
    """The imgpipe program: $IMGPIPE_BIN, else build/bin/imgpipe, else imgpipe on the PATH."""
    for candidate in (os.environ.get("IMGPIPE_BIN"), ROOT / "build" / "bin" / "imgpipe", shutil.which("imgpipe")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


@pytest.fixture(scope="session")
def cli():
    path = cli_path()
    if path is None:
        pytest.skip("no imgpipe program to compare with (set IMGPIPE_BIN or build build/bin/imgpipe)")
    return path


@pytest.fixture
def run_cli(cli, tmp_path):
    """run_cli(pipeline_text, array) -> the command line's output for the array as a TIFF."""
    tifffile = pytest.importorskip("tifffile")
    count = [0]

    def run(text, array, *options):
        count[0] += 1
        src = tmp_path / f"in{count[0]}.tif"
        dst = tmp_path / f"out{count[0]}.tif"
        write_tiff(src, array)
        done = subprocess.run([cli, "run", "-q", "--device", "cpu", "--tiff-compression", "none", *options, "-e", text, str(src), str(dst)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return tifffile.imread(dst)
    return run


def write_tiff(path, array):
    import tifffile
    channels = array.shape[2] if array.ndim == 3 else 1
    if channels in (3, 4):
        extra = {"extrasamples": ["unassalpha"]} if channels == 4 else {}
        tifffile.imwrite(path, array, photometric="rgb", planarconfig="contig", metadata=None, **extra)
    else:
        tifffile.imwrite(path, array.reshape(array.shape[:2]), photometric="minisblack", metadata=None)


def random_image(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return rng.random(shape, dtype=np.float32)
    return rng.integers(0, np.iinfo(dtype).max + 1, size=shape, dtype=dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(20240530)
