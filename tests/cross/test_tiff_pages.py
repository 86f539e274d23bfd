"""Multi-page TIFF: --page N (from 0) decodes that page, with its own shape and depth, whatever
the thread count (each thread's libtiff handle must be on the page too), read whole or streamed,
and carries that page's metadata (its resolution) to the output; a page past the last or
--page 1 of a PNG is one error line; --all-pages in a folder writes STEM-pN for each page of a
multi-page file and STEM for a one-page file, and --resume makes only the missing pages."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import tifffile
from PIL import Image
from crosslib import BIN, check, cli, require_setup, summary

RNG = np.random.default_rng(77)


def make_pages(path):
    pages = [RNG.integers(0, 256, (17, 31, 3), dtype=np.uint8),
             RNG.integers(0, 65536, (131, 64), dtype=np.uint16),
             RNG.standard_normal((3, 5)).astype(np.float32)]
    with tifffile.TiffWriter(path) as w:
        for i, p in enumerate(pages):
            w.write(p, photometric="rgb" if p.ndim == 3 else "minisblack", compression="zlib" if i == 1 else None,
                    rowsperstrip=5, resolution=page_dpi(i), resolutionunit="inch")
    return pages


def page_dpi(i):
    return (100 + 50 * i, 300 - 7 * i)


def check_resolution(path, i, what):
    """The output's resolution is page i's."""
    with tifffile.TiffFile(path) as t:
        tags = t.pages[0].tags
        got = tuple(tags[name].value[0] / tags[name].value[1] for name in ("XResolution", "YResolution")
                    if name in tags)
    check(got == page_dpi(i), "%s: resolution %s, page %d has %s" % (what, got, i, page_dpi(i)))


def messages(res):
    return [line for line in res.stderr.splitlines() if "device:" not in line]


def check_single(tmp, multi, pages):
    for i, want in enumerate(pages):
        for threads, stream in ((1, "off"), (3, "off"), (1, "on"), (3, "on")):
            what = "--page %d --threads %d --stream %s" % (i, threads, stream)
            out = os.path.join(tmp, "page.tif")
            res = cli("--threads", str(threads), "--stream", stream, "--tiff-compression", "none", "--page", str(i),
                      "-e", "transpose | transpose", multi, out)
            check(res.returncode == 0, "%s: %s" % (what, res.stderr.strip()))
            check(("streamed in bands" in res.stderr) == (stream == "on"), "%s: %s" % (what, res.stderr.strip()))
            if res.returncode == 0:
                got = tifffile.imread(out)
                check(got.dtype == want.dtype and np.array_equal(got, want),
                      "%s: got %s %s" % (what, got.shape, got.dtype))
                check_resolution(out, i, what)
    for stream in ("off", "on"):
        res = cli("--stream", stream, "--page", "3", "-e", "transpose", multi, os.path.join(tmp, "none.tif"))
        lines = [line for line in messages(res) if "not streamed" not in line]
        check(res.returncode == 1 and len(lines) == 1 and "3 pages" in lines[0] and "no page 3" in lines[0],
              "--page 3 of 3 pages, --stream %s: exit %d, %s" % (stream, res.returncode, lines))
        check(not os.path.exists(os.path.join(tmp, "none.tif")), "--page 3: an output was left")
    png = os.path.join(tmp, "one.png")
    Image.fromarray(pages[0]).save(png)
    res = cli("--page", "1", "-e", "transpose", png, os.path.join(tmp, "none.png"))
    lines = messages(res)
    check(res.returncode == 1 and len(lines) == 1 and "one page" in lines[0], "PNG --page 1: %s" % lines)
    res = cli("--page", "0", "-e", "transpose", png, os.path.join(tmp, "zero.png"))
    check(res.returncode == 0, "PNG --page 0: %s" % messages(res))
    res = cli("--all-pages", "-e", "transpose", multi, os.path.join(tmp, "all.tif"))
    check(res.returncode == 2 and "--page N" in res.stderr, "--all-pages on one image: %s" % res.stderr.strip())
    res = cli("--all-pages", "--page", "1", "-e", "transpose", tmp, os.path.join(tmp, "o"))
    check(res.returncode == 2, "--all-pages with --page: exit %d" % res.returncode)
    helptext = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
    check("--page N" in helptext and "counted from 0" in helptext and "--all-pages" in helptext,
          "--help does not describe --page and --all-pages")


def check_folder(tmp):
    folder = os.path.join(tmp, "in")
    os.mkdir(folder)
    pages = make_pages(os.path.join(folder, "scan.tif"))
    single = RNG.integers(0, 256, (9, 4), dtype=np.uint8)
    tifffile.imwrite(os.path.join(folder, "single.tif"), single)
    Image.fromarray(pages[0]).save(os.path.join(folder, "photo.png"))
    out = os.path.join(tmp, "out")
    args = ("--all-pages", "--format", "tif", "--tiff-compression", "none", "--jobs", "2", "-e",
            "transpose | transpose", folder, out)
    res = cli(*args)
    check(res.returncode == 0 and "5 succeeded, 0 failed" in res.stderr, "--all-pages: %s" % res.stderr.strip())
    want = {"scan-p0.tif": pages[0], "scan-p1.tif": pages[1], "scan-p2.tif": pages[2], "single.tif": single,
            "photo.tif": pages[0]}
    check(sorted(os.listdir(out)) == sorted(want), "--all-pages outputs: %s" % sorted(os.listdir(out)))
    for name, a in want.items():
        path = os.path.join(out, name)
        if os.path.exists(path):
            check(np.array_equal(tifffile.imread(path), a), "--all-pages: %s is not its page" % name)
            if name.startswith("scan-p"):
                check_resolution(path, int(name[6]), "--all-pages " + name)
    os.remove(os.path.join(out, "scan-p1.tif"))
    res = cli("--resume", *args)
    check(res.returncode == 0 and "1 succeeded, 0 failed, 4 skipped" in res.stderr,
          "--all-pages --resume: %s" % res.stderr.strip())
    path = os.path.join(out, "scan-p1.tif")
    check(os.path.exists(path) and np.array_equal(tifffile.imread(path), pages[1]), "--resume did not remake page 1")


def main():
    require_setup()
    with tempfile.TemporaryDirectory() as tmp:
        multi = os.path.join(tmp, "multi.tif")
        pages = make_pages(multi)
        check_single(tmp, multi, pages)
        check_folder(tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
