"""CCITT fax TIFF with a coding error in a line (one bit flipped in the strip, the first flip of a
seeded order that libtiff decodes past and Pillow decodes too): decoded by default with one
warning line naming the damage, refused in one line under --fail-on warning with nothing written.
Group 3 (each line coded alone, a line ending with EOL): the pixels Pillow gives, and the source's
on every line but the damaged one. Group 4 (each line coded against the one above, so the damage
runs on): Pillow's pixels above the damaged line; below it libtiff may leave bits unwritten (which
Pillow fills from whatever its buffer held), and imgpipe gives the same bytes alone, with one
thread, and in a folder after a file that left its memory full of ones."""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image
from crosslib import BIN, check, cli, require_setup, summary

WIDTH, HEIGHT = 173, 120


def source():
    """Text-like black blocks on white, 0 and 255."""
    rng = np.random.default_rng(17)
    a = np.full((HEIGHT, WIDTH), 255, np.uint8)
    for _ in range(50):
        y, x = rng.integers(0, HEIGHT - 10), rng.integers(0, WIDTH - 12)
        a[y:y + rng.integers(2, 10), x:x + rng.integers(2, 12)] = 0
    return a


def pillow_pixels(path):
    """Pillow's decoding as 0 and 255, or None when Pillow refuses the file."""
    try:
        im = Image.open(path)
        im.load()
        return np.asarray(im.convert("L"))
    except Exception:
        return None


def imgpipe(src, dst, *extra):
    """(exit code, stderr lines but the device line) of a pass-through run to uncompressed TIFF."""
    res = cli("--tiff-compression", "none", *extra, "-e", "transpose | transpose", src, dst)
    return res.returncode, [line for line in res.stderr.splitlines() if "device:" not in line]


def read_output(path):
    return np.asarray(Image.open(path).convert("L"))


def damaged_variant(tmp, compression, want):
    """The first single-bit flip of the strip, in a seeded order, after which imgpipe decodes with a
    warning, Pillow decodes too and want(imgpipe's pixels, Pillow's) holds: (path, Pillow's pixels)."""
    clean = os.path.join(tmp, "clean_%s.tif" % compression)
    Image.fromarray(source()).convert("1").save(clean, compression=compression)
    data = open(clean, "rb").read()
    tags = Image.open(clean).tag_v2
    start, length = tags[273][0], tags[279][0]
    rng = np.random.default_rng(23)
    path, out = os.path.join(tmp, "bad_%s.tif" % compression), os.path.join(tmp, "probe.tif")
    for bit in rng.permutation(length * 8)[:400]:
        bad = bytearray(data)
        bad[start + bit // 8] ^= 0x80 >> (bit % 8)
        open(path, "wb").write(bad)
        pil = pillow_pixels(path)
        if pil is None:
            continue
        rc, lines = imgpipe(path, out)
        if rc == 0 and any("warning:" in line for line in lines) and want(read_output(out), pil):
            return path, pil
    return None, None


def damaged_line(lines):
    """The line libtiff names in the warning ("... at line 57 of strip 0 ..."), or None."""
    found = re.search(r"at line (\d+) of strip", " ".join(lines))
    return int(found.group(1)) if found else None


def check_warned_and_refused(tmp, path, what):
    """Decoded with one warning naming the file and the damage; refused under --fail-on warning."""
    out = os.path.join(tmp, "out.tif")
    rc, lines = imgpipe(path, out)
    line = damaged_line(lines)
    check(rc == 0 and len(lines) == 1 and lines[0].startswith("imgpipe: warning: %s: TIFF: " % path)
          and line is not None, "%s: exit %d, %s" % (what, rc, lines))
    refused = os.path.join(tmp, "refused.tif")
    rc, lines = imgpipe(path, refused, "--fail-on", "warning")
    check(rc == 1 and len(lines) == 1 and "(refused: --fail-on warning)" in lines[0] and not os.path.exists(refused),
          "%s, --fail-on warning: exit %d, %s, output left: %s" % (what, rc, lines, os.path.exists(refused)))
    return line


def check_group3(tmp):
    path, pil = damaged_variant(tmp, "group3", lambda got, pil: True)
    check(path is not None, "group 3: no single-bit flip decoded with a warning that Pillow decodes")
    if path is None:
        return
    line = check_warned_and_refused(tmp, path, "group 3")
    out = os.path.join(tmp, "g3.tif")
    imgpipe(path, out)
    got = read_output(out)
    check(np.array_equal(got, pil), "group 3: %d pixels differ from Pillow's" % np.count_nonzero(got != pil))
    changed = sorted(set(np.nonzero(got != source())[0].tolist()))
    check(changed in ([], [line]), "group 3: lines %s differ from the source, the damage is on line %s" % (changed, line))


def check_group4(tmp):
    # a flip after which Pillow's buffer shows through: libtiff left bits of some line unwritten
    path, pil = damaged_variant(tmp, "group4", lambda got, pil: not np.array_equal(got, pil))
    check(path is not None, "group 4: no single-bit flip decoded with a warning and bits left unwritten")
    if path is None:
        return
    line = check_warned_and_refused(tmp, path, "group 4") or 0
    alone, one_thread = os.path.join(tmp, "g4.tif"), os.path.join(tmp, "g4_1.tif")
    imgpipe(path, alone)
    imgpipe(path, one_thread, "--threads", "1")
    got = read_output(alone)
    check(np.array_equal(got[:line], pil[:line]), "group 4: lines above the damaged one (%d) differ from Pillow's" % line)
    check(np.array_equal(got[:line], source()[:line]), "group 4: lines above the damaged one differ from the source")
    check(open(alone, "rb").read() == open(one_thread, "rb").read(), "group 4: one thread gives other bytes")
    # In a folder the first file, all white (bits of one, min-is-black) and not fax-coded, leaves ones
    # in the memory the fax is decoded into next.
    folder, out = os.path.join(tmp, "folder"), os.path.join(tmp, "folder_out")
    os.mkdir(folder)
    Image.fromarray(np.full((HEIGHT, WIDTH), 255, np.uint8)).convert("1").save(os.path.join(folder, "a_white.tif"))
    os.link(path, os.path.join(folder, "b_fax.tif"))
    res = subprocess.run([BIN, "run", "--device", "cpu", "--jobs", "1", "--threads", "1", "--tiff-compression", "none",
                          "-e", "transpose | transpose", folder, out], capture_output=True, text=True)
    got_folder = os.path.join(out, "b_fax.tif")
    check(res.returncode == 0 and os.path.exists(got_folder) and open(got_folder, "rb").read() == open(alone, "rb").read(),
          "group 4: in a folder after another file, exit %d, other bytes than alone" % res.returncode)


def main():
    require_setup()
    with tempfile.TemporaryDirectory() as tmp:
        check_group3(tmp)
        check_group4(tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
