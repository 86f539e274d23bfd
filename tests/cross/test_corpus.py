"""A conformance corpus made here (corpus_make.py: PNG of every colour type and depth, tRNS, Adam7,
odd sizes, split and empty IDATs, text and colour chunks; TIFF of every sample format, layout,
compression and predictor the writers here have, bilevel G3/G4, palette, min-is-white, extra
samples, both byte orders, BigTIFF; JPEG baseline, progressive, optimized, arithmetic, restart
markers, 4:4:4 to 4:1:1, gray, CMYK, EXIF and ICC), and hostile variants of every file
(truncations at four offsets, bit flips with a fixed seed). Run through imgpipe as folders (a
pass-through pipeline to uncompressed TIFF), then a sample of the hostile files one at a time.

Every file Pillow decodes, imgpipe decodes, and to Pillow's pixels put in imgpipe's terms:
palette -> RGB, or RGBA when the file has tRNS (Pillow's convert); bilevel -> 0 and 255;
CMYK -> RGB (Pillow's convert); a gray or RGB tRNS key -> imgpipe's extra alpha channel is
checked against the samples the file was made from, not against Pillow (whose convert compares
16-bit and low-depth keys with scaled pixels); 16-bit samples where Pillow gives 8 bits ->
imgpipe's high byte (Pillow's own reduction); integers Pillow keeps where imgpipe gives float ->
the integers as 32-bit floats. JPEG within one level, everything else exactly. Where the samples
the file was made from are known, imgpipe's output must equal them too. A hostile file is decoded
(a whole, readable output) or refused in one line with nothing written, never a crash or a hang;
one whose header, as Pillow reads it, claims more than imgpipe's limits is refused (and not given
to Pillow, which would decode gigabytes of fill)."""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import tifffile
from PIL import Image, ImageFile
from corpus_make import hostile_variants, make_corpus
from crosslib import BIN, check, require_setup, summary

VARIANT_WRITER = os.environ.get("IMGPIPE_JPEG_VARIANT_WRITE")
PASS_THROUGH = "transpose | transpose"
Image.MAX_IMAGE_PIXELS = None


def pillow_wrong(name):
    """Why Pillow 9.4 gives other samples than the file holds (imgpipe gives those the file was made
    from), or None; for a hostile variant, its original's reason."""
    stem = name.split(".")[0]
    if re.search(r"(float32|int32|uint32|f32gray|f32rgb).*_be", stem):
        return "Pillow swaps big-endian 32-bit samples that libtiff already gave in host order"
    if stem.startswith("tif_uint32_"):
        return "Pillow reads unsigned 32-bit samples as signed"
    if stem == "tif_uint16_miniswhite":
        return "Pillow leaves 16-bit min-is-white samples as stored"
    if re.match(r"tif_uint16_x\d_extra1$", stem):
        return "Pillow keeps the high byte of 16-bit premultiplied samples before dividing by alpha"
    if stem.startswith("tif_uint16_x3") and "planar" in stem:
        return "Pillow mixes the planes of 16-bit planar RGB"
    return None


def run_folder(src, dst, timeout=120, strip=True):
    """imgpipe over a folder: (return code or None on a time-out, {input name: its error}, warned names,
    how many it skipped as not images). Without strip the metadata of each file is read and carried too."""
    cmd = [BIN, "run", "--device", "cpu", "--jobs", "2", "--threads", "1", "--format", "tif",
           "--tiff-compression", "none", *(["--strip"] if strip else []), "--quiet", "-e", PASS_THROUGH, src, dst]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, {}, set(), 0
    failed, warned = {}, set()
    skipped = re.search(r"(\d+) not images", res.stderr)
    for line in res.stderr.splitlines():
        if line.startswith("  failed: "):
            path, _, why = line[len("  failed: "):].partition(": ")
            failed[os.path.basename(path)] = why
        elif line.startswith("imgpipe: warning: "):
            warned.add(os.path.basename(line[len("imgpipe: warning: "):].split(": ")[0]))
    return res.returncode, failed, warned, int(skipped.group(1)) if skipped else 0


def run_one(src, dst, timeout=20):
    """imgpipe on one file: (return code or None on a time-out, stderr lines but the device line)."""
    cmd = [BIN, "run", "--device", "cpu", "--tiff-compression", "none", "--strip", "-e", PASS_THROUGH, src, dst]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, []
    return res.returncode, [line for line in res.stderr.splitlines() if "device:" not in line]


# imgpipe's default --max-ratio and --max-pixels: a file whose header claims more is refused.
MAX_RATIO = 100000
MAX_PIXELS = 1 << 30
OVER_LIMITS = "over imgpipe's limits"


def pillow_load(path):
    """Pillow's image, wholly decoded; None when Pillow refuses the file; OVER_LIMITS, without
    decoding, when the size Pillow reads in the header is over imgpipe's limits (at least a byte a
    pixel decoded: a bit flip can make a 260-byte file claim 2 GB, which Pillow would fill in)."""
    try:
        im = Image.open(path)
        pixels = im.size[0] * im.size[1]
        if pixels > MAX_PIXELS or pixels > MAX_RATIO * os.path.getsize(path):
            return OVER_LIMITS
        im.load()
        return im
    except Exception:
        return None


def output_of(folder, name):
    """imgpipe's output for input name, as (h, w, c), or None when there is none."""
    path = os.path.join(folder, os.path.splitext(name)[0] + ".tif")
    if not os.path.exists(path):
        return None
    with tifffile.TiffFile(path) as t:   # the page itself: a carried description may be damaged
        page = t.pages[0]
        return page.asarray().reshape(page.imagelength, page.imagewidth, -1)


def pillow_view(im, got):
    """(Pillow's pixels, imgpipe's) in the same terms (see the module's text), both (h, w, c)."""
    mode, key = im.mode, im.info.get("transparency")
    if mode == "P":
        im = im.convert("RGBA" if key is not None else "RGB")
    elif mode == "1":
        im = im.convert("L")
    elif mode in ("CMYK", "YCbCr"):
        im = im.convert("RGB")
    w, h = im.size
    want = np.asarray(im).reshape(h, w, -1)
    have = got
    if key is not None and mode != "P" and have.shape[2] == want.shape[2] + 1:
        have = have[..., :-1]
    if mode == "RGBA" and have.shape[2] == 2:   # Pillow reads 16-bit gray+alpha PNG as RGBA
        have = have[..., [0, 0, 0, 1]]
    if want.dtype == np.uint8 and have.dtype == np.uint16:
        have = have >> 8
    if have.dtype.kind == "f" and want.dtype.kind in "iu":
        want = want.astype(np.float32)
    return want, have


def differs(want, have, tolerance):
    """None when equal within tolerance, else the reason."""
    if want.shape != have.shape:
        return "shape %s %s, want %s %s" % (have.shape, have.dtype, want.shape, want.dtype)
    want, have = want.astype(np.float64), have.astype(np.float64)
    both_nan = np.isnan(want) & np.isnan(have)   # a NaN sample is the same NaN sample
    diff = np.where(both_nan, 0, np.abs(want - have))
    worst = np.nanmax(diff) if diff.size else 0
    if worst > tolerance or np.isnan(diff).any():
        return "max difference %s (allowed %s), %s %s against %s" % (worst, tolerance, have.dtype, have.shape, want.dtype)
    return None


def agree(ok, pillow_must, what):
    """A disagreement with Pillow: a failure, or (pillow_must false) a finding printed and counted."""
    if pillow_must or ok:
        check(ok, what)
    else:
        print("finding:", what)


def check_outcome(name, src_dir, out_dir, failed, tolerance, truth, pillow_must, skipped):
    """One input of a folder run; returns 'decoded', 'refused', 'over-limits', 'pillow-only' or
    'differs'. An input with neither output nor error line goes to skipped (the folder took it for
    no image)."""
    got = output_of(out_dir, name)
    check(not (got is not None and name in failed), "%s: refused (%s) yet an output was written" %
          (name, failed.get(name)))
    if got is None and name not in failed:
        skipped.append(name)
        failed[name] = "not an image"
    im = pillow_load(os.path.join(src_dir, name))
    if im is OVER_LIMITS:
        agree(got is None, pillow_must, "%s: over imgpipe's limits as Pillow reads its header, yet decoded" % name)
        return "over-limits"
    if im is not None and got is None:
        agree(pillow_wrong(name) is not None, pillow_must, "%s: Pillow decodes it (%s %s), imgpipe refused it: %s" %
              (name, im.mode, im.size, failed.get(name)))
        return "pillow-only"
    if got is None:
        return "refused"
    if truth is not None:
        why = differs(truth.reshape(got.shape[0], got.shape[1], -1), got, tolerance)
        check(why is None, "%s against the samples it was made from: %s" % (name, why))
    if im is not None:
        want, have = pillow_view(im, got)
        why = differs(want, have, tolerance)
        if why is not None and pillow_wrong(name):
            return "decoded"   # imgpipe gives the samples the file was made from, Pillow does not
        agree(why is None, pillow_must, "%s (Pillow %s): %s" % (name, im.mode, why))
        if why is not None:
            return "differs"
    return "decoded"


def no_temporaries(folder, what):
    left = [n for n in os.listdir(folder) if n.startswith(".imgpipe-tmp-")]
    check(not left, "%s: temporaries left: %s" % (what, left))


def check_corpus(tmp, entries):
    src, out = os.path.join(tmp, "corpus"), os.path.join(tmp, "out")
    rc, failed, warned, not_images = run_folder(src, out)
    check(rc in (0, 1), "corpus folder run: return code %s (a crash or a hang)" % rc)
    counts, skipped = {}, []
    for name, (tolerance, truth) in sorted(entries.items()):
        outcome = check_outcome(name, src, out, failed, tolerance, truth, True, skipped)
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome == "refused":
            print("note: Pillow and imgpipe both refuse %s: %s" % (name, failed.get(name)))
    check(not warned, "corpus: warnings on intact files: %s" % sorted(warned))
    check(not skipped and not_images == 0, "corpus: intact files taken for no image: %s" % skipped)
    no_temporaries(out, "corpus")
    print("corpus: %d files, %s" % (len(entries), counts))


def make_hostile(tmp, entries, rng):
    """The hostile variants of every corpus file, in their own folder: {name: the corpus entry's tolerance}."""
    folder = os.path.join(tmp, "hostile")
    os.mkdir(folder)
    made = {}
    for name in sorted(entries):
        stem, ext = os.path.splitext(name)
        data = open(os.path.join(tmp, "corpus", name), "rb").read()
        for label, variant in hostile_variants(data, rng):
            vname = "%s.%s%s" % (stem, label, ext)
            open(os.path.join(folder, vname), "wb").write(variant)
            made[vname] = entries[name][0]
    return folder, made


def locate_crashes(folder, names, tmp):
    """After a folder run that crashed or hung: each file alone, to name the culprits."""
    for name in sorted(names):
        rc, lines = run_one(os.path.join(folder, name), os.path.join(tmp, "alone.tif"), timeout=10)
        check(rc in (0, 1), "%s: return code %s alone (a crash or a hang)" % (name, rc))


def check_hostile(tmp, entries, rng):
    folder, made = make_hostile(tmp, entries, rng)
    out = os.path.join(tmp, "hostile_out")
    rc, failed, _, not_images = run_folder(folder, out, timeout=180, strip=False)
    check(rc in (0, 1), "hostile folder run: return code %s (a crash or a hang)" % rc)
    if rc not in (0, 1):
        locate_crashes(folder, made, tmp)
        return
    counts, skipped = {}, []
    for name, tolerance in sorted(made.items()):
        # libtiff reads a damaged directory more strictly than Pillow's own parser, which goes on
        # with the tags before the damage: findings, not failures, for TIFF.
        outcome = check_outcome(name, folder, out, failed, tolerance, None, not name.startswith("tif_"), skipped)
        counts[outcome] = counts.get(outcome, 0) + 1
    no_temporaries(out, "hostile")
    print("hostile: %d files, %s, %d not images" % (len(made), counts, len(skipped)))
    check(len(skipped) == not_images, "hostile: %d inputs without output or error line, the folder skipped %d"
          % (len(skipped), not_images))
    check_not_images(folder, skipped, rng, tmp)
    check_alone(folder, sorted(made), rng, tmp)


def check_not_images(folder, names, rng, tmp):
    """A seeded sample of the files a folder skips as no image: alone, each is one error line."""
    for name in rng.choice(sorted(names), size=min(15, len(names)), replace=False) if names else ():
        alone = os.path.join(tmp, "alone.tif")
        rc, lines = run_one(os.path.join(folder, name), alone)
        check(rc == 1 and len(lines) == 1 and "not a PNG, JPEG or TIFF file" in lines[0] and not os.path.exists(alone),
              "%s: skipped in the folder, alone: exit %s, %s" % (name, rc, lines))


def check_alone(folder, names, rng, tmp):
    """A seeded sample, one file a run: exit 0 with an output, or exit 1, one line, nothing written."""
    for name in rng.choice(names, size=min(40, len(names)), replace=False):
        dst = os.path.join(tmp, "alone", os.path.splitext(name)[0] + ".tif")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        rc, lines = run_one(os.path.join(folder, name), dst)
        check(rc in (0, 1), "%s alone: return code %s" % (name, rc))
        if rc == 1:
            check(len(lines) == 1 and not os.path.exists(dst), "%s alone: refused with %d lines, output %s" %
                  (name, len(lines), os.path.exists(dst)))
        elif rc == 0:
            check(os.path.exists(dst), "%s alone: exit 0 and no output" % name)
        no_temporaries(os.path.dirname(dst), name)


def main():
    require_setup()
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, "corpus"))
        entries = make_corpus(os.path.join(tmp, "corpus"), VARIANT_WRITER)
        print("corpus made in %.1f s" % (time.monotonic() - start))
        check_corpus(tmp, entries)
        check_hostile(tmp, entries, np.random.default_rng(4242))
    print("%.1f s" % (time.monotonic() - start))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
