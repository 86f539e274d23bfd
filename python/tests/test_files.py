"""run_file and run_folder: the command line's outputs, progress, failures and cancellation."""
import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import imgpipe
from conftest import random_image

PIPE = "grayscale | median radius=1"


def write_png(path, array):
    from PIL import Image
    Image.fromarray(array).save(path)


def read_image(path):
    from PIL import Image
    return np.asarray(Image.open(path))


@pytest.fixture
def folder(tmp_path, rng):
    """Seven PNG photos of odd sizes in tmp/in."""
    src = tmp_path / "in"
    src.mkdir()
    for i in range(7):
        write_png(src / f"img{i}.png", random_image(rng, (17 + 6 * i, 23 + 4 * i, 3), np.uint8))
    return src


def test_run_file_equals_cli(cli, tmp_path, rng):
    src = tmp_path / "in.png"
    write_png(src, random_image(rng, (45, 61, 3), np.uint8))
    ours, theirs = tmp_path / "ours.png", tmp_path / "theirs.png"
    imgpipe.Pipeline(PIPE).run_file(src, ours, device="cpu")
    subprocess.run([cli, "run", "-q", "--device", "cpu", "-e", PIPE, str(src), str(theirs)], check=True)
    assert ours.read_bytes() == theirs.read_bytes()
    np.testing.assert_array_equal(read_image(ours), imgpipe.Pipeline(PIPE)(read_image(src)))


def test_run_file_formats_and_options(tmp_path, rng):
    src = tmp_path / "in.png"
    write_png(src, random_image(rng, (30, 40, 3), np.uint8))
    p = imgpipe.Pipeline(PIPE)
    p.run_file(src, tmp_path / "a.tif", tiff_compression="lzw")
    p.run_file(src, tmp_path / "b.jpg", jpeg_quality=90)
    p.run_file(str(src), str(tmp_path / "c.png"), png_level=1, threads=1)
    np.testing.assert_array_equal(read_image(tmp_path / "a.tif"), read_image(tmp_path / "c.png"))
    assert read_image(tmp_path / "b.jpg").shape == (30, 40)


def test_run_file_errors(tmp_path):
    p = imgpipe.Pipeline(PIPE)
    with pytest.raises(OSError) as caught:
        p.run_file(tmp_path / "missing.png", tmp_path / "out.png")
    assert "missing.png" in str(caught.value)
    garbage = tmp_path / "garbage.png"
    garbage.write_bytes(b"not an image at all" * 10)
    with pytest.raises(OSError):
        p.run_file(garbage, tmp_path / "out.png")
    assert not (tmp_path / "out.png").exists()


def test_run_folder_progress(folder, tmp_path):
    calls = []
    result = imgpipe.run_folder(PIPE, folder, tmp_path / "out", progress=lambda d, t: calls.append((d, t)), jobs=2)
    assert result == imgpipe.FolderResult(7, 7, 0)
    assert calls == [(i, 7) for i in range(1, 8)]
    p = imgpipe.Pipeline(PIPE)
    for src in sorted(folder.iterdir()):
        np.testing.assert_array_equal(read_image(tmp_path / "out" / src.name), p(read_image(src)))


def test_run_folder_tqdm_like_bar(folder, tmp_path):
    class Bar:   # what run_folder uses of tqdm.tqdm
        def __init__(self):
            self.n, self.total, self.refreshed = 0, None, 0

        def update(self, k):
            self.n += k
            return True   # tqdm returns whether it redrew; that must not stop the run

        def refresh(self):
            self.refreshed += 1

    bar = Bar()
    imgpipe.run_folder(imgpipe.Pipeline(PIPE), folder, tmp_path / "out", progress=bar, output_format="tif")
    assert (bar.n, bar.total) == (7, 7)
    assert len(list((tmp_path / "out").glob("*.tif"))) == 7


def test_run_folder_with_a_bad_file(folder, tmp_path):
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    calls = []
    with pytest.raises(imgpipe.Error) as caught:
        imgpipe.run_folder(PIPE, folder, tmp_path / "out", progress=lambda d, t: calls.append(d))
    assert caught.value.result == imgpipe.FolderResult(8, 7, 1)
    assert "broken.png" in str(caught.value)
    assert calls[-1] == 8
    assert len(list((tmp_path / "out").iterdir())) == 7


def test_run_folder_callback_exception_cancels(folder, tmp_path):
    """One worker: the image after the one whose callback raised is never taken, however long
    the callback takes (the workers wait for it to see their counts)."""
    class Stop(Exception):
        pass

    def progress(done, total):
        time.sleep(0.05)
        if done == 2:
            raise Stop()
    with pytest.raises(Stop):
        imgpipe.run_folder(PIPE, folder, tmp_path / "out", progress=progress, jobs=1)
    written = [f for f in (tmp_path / "out").iterdir()]
    assert len(written) == 2
    assert not [f for f in written if f.name.startswith(".")]   # no temporaries left


def test_run_folder_slow_callback_sees_every_count(folder, tmp_path):
    seen = []

    def progress(done, total):
        time.sleep(0.02)
        seen.append((done, total))
    result = imgpipe.run_folder(PIPE, folder, tmp_path / "out", progress=progress, jobs=3)
    assert seen == [(i, 7) for i in range(1, 8)]
    assert (result.total, result.done, result.failed) == (7, 7, 0)


def test_run_folder_ctrl_c(folder, tmp_path):
    """SIGINT while the folder runs (the main thread waiting in C): KeyboardInterrupt once the
    images in flight are done; nothing half-written is left."""
    def progress(done, total):
        if done == 1:
            os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        imgpipe.run_folder(PIPE, folder, tmp_path / "out", progress=progress, jobs=1)
    written = list((tmp_path / "out").iterdir())
    assert 1 <= len(written) < 7
    assert not [f for f in written if f.name.startswith(".")]


def test_run_folder_ctrl_c_from_elsewhere(tmp_path, rng):
    """The signal comes while no callback runs: seen within the wait (100 ms)."""
    src = tmp_path / "big"
    src.mkdir()
    for i in range(40):
        write_png(src / f"{i}.png", random_image(rng, (300, 400, 3), np.uint8))
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            imgpipe.run_folder("grayscale | median radius=3", src, tmp_path / "out", jobs=1, threads=1)
    finally:
        timer.cancel()
    assert len(list((tmp_path / "out").iterdir())) < 40


def test_run_folder_missing(tmp_path):
    with pytest.raises(OSError):
        imgpipe.run_folder(PIPE, tmp_path / "nowhere", tmp_path / "out")
