"""histogram stage against numpy bincount and cv2.calcHist on real photographs, through the CLI."""
import csv
import os
import sys
import tempfile

import cv2
import numpy as np
from crosslib import BIN, IMAGES, check, cli, summary


def run(stage, src, dst, cwd):
    return cli("-e", stage, src, dst, cwd=cwd)


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], np.array([[int(v) for v in row] for row in rows[1:]], dtype=np.int64)


def expected_bins(channel, bins):
    """Our bin of every value: integer v*bins/range for 8/16-bit, floor(v*bins) clamped for float."""
    if channel.dtype == np.uint8:
        return channel.astype(np.int64) * bins // 256
    if channel.dtype == np.uint16:
        return channel.astype(np.int64) * bins // 65536
    return np.clip(np.floor(channel.astype(np.float64) * bins), 0, bins - 1).astype(np.int64)


def run_case(tmp, name, img_rgb, bins, ext, header):
    """Writes img_rgb (RGB order) as name.ext, runs histogram, checks CSV counts and pass-through."""
    src = os.path.join(tmp, name + "." + ext)
    dst = os.path.join(tmp, name + "_out." + ext)
    on_disk = cv2.cvtColor(img_rgb, cv2.COLOR_RGB2BGR) if img_rgb.ndim == 3 else img_rgb
    cv2.imwrite(src, on_disk)
    r = run(f"histogram bins={bins}", src, dst, tmp)
    csv_path = os.path.join(tmp, name + ".hist.csv")
    if r.returncode != 0 or not os.path.exists(csv_path):
        check(False, f"{name} bins={bins}: exit {r.returncode}: {r.stderr.strip()}")
        return
    got_header, table = read_csv(csv_path)
    check(got_header == header, f"{name}: header {got_header}, want {header}")
    channels = img_rgb.reshape(img_rgb.shape[0], img_rgb.shape[1], -1)
    want = np.stack([np.bincount(expected_bins(channels[:, :, c].ravel(), bins), minlength=bins)
                     for c in range(channels.shape[2])], axis=1)
    ok = table.shape == (bins, 1 + want.shape[1]) and np.array_equal(table[:, 0], np.arange(bins))
    check(ok and np.array_equal(table[:, 1:], want), f"{name} bins={bins}: counts differ from numpy bincount")
    if img_rgb.dtype == np.uint8:
        cv_counts = np.stack([cv2.calcHist([np.ascontiguousarray(channels[:, :, c])], [0], None, [bins], [0, 256])[:, 0]
                              for c in range(channels.shape[2])], axis=1)
        check(ok and np.array_equal(table[:, 1:], cv_counts.astype(np.int64)), f"{name} bins={bins}: counts differ from cv2.calcHist")
    passed_through = cv2.imread(dst, cv2.IMREAD_UNCHANGED)
    check(passed_through is not None and np.array_equal(passed_through, on_disk), f"{name}: image changed on the way through")


def check_plot(tmp, img):
    src = os.path.join(tmp, "plotme.png")
    cv2.imwrite(src, img)
    r = run("histogram bins=64 out=counts/{stem}.csv plot={stem}.bars.png", src, os.path.join(tmp, "o.png"), tmp)
    check(r.returncode != 0 and "counts/plotme.csv" in r.stderr, f"missing folder not reported: {r.stderr.strip()}")
    os.mkdir(os.path.join(tmp, "counts"))
    r = run("histogram bins=64 out=counts/{stem}.csv plot={stem}.bars.png", src, os.path.join(tmp, "o.png"), tmp)
    plot = cv2.imread(os.path.join(tmp, "plotme.bars.png"))
    ok = r.returncode == 0 and plot is not None and plot.shape == (400, 800, 3) and (plot < 128).any()
    check(ok and os.path.exists(os.path.join(tmp, "counts", "plotme.csv")), f"plot: {r.stderr.strip()}")
    leftovers = [f for f in os.listdir(tmp) + os.listdir(os.path.join(tmp, "counts")) if ".csv." in f or ".png." in f]
    check(not leftovers, f"temporary files left: {leftovers}")


def main():
    if not BIN:
        print("SKIP: IMGPIPE_BIN is not set")
        return 77
    images = IMAGES
    camera = cv2.imread(os.path.join(images, "camera.png"), cv2.IMREAD_GRAYSCALE)
    coffee = cv2.imread(os.path.join(images, "coffee.png"))
    chelsea = cv2.imread(os.path.join(images, "chelsea.png"))
    if camera is None or coffee is None or chelsea is None:
        print("FAIL: sample images not found in", images)
        return 1
    coffee = cv2.cvtColor(coffee, cv2.COLOR_BGR2RGB)
    chelsea = cv2.cvtColor(chelsea, cv2.COLOR_BGR2RGB)
    with tempfile.TemporaryDirectory() as tmp:
        run_case(tmp, "coffee", coffee, 256, "png", ["bin", "r", "g", "b"])
        run_case(tmp, "chelsea", chelsea, 10, "png", ["bin", "r", "g", "b"])
        run_case(tmp, "camera", camera, 256, "png", ["bin", "count"])
        run_case(tmp, "camera7", camera[:211, :97], 7, "tif", ["bin", "count"])
        run_case(tmp, "camera16", camera.astype(np.uint16) * 257 + 3, 100, "tif", ["bin", "count"])
        run_case(tmp, "chelsea16", chelsea.astype(np.uint16) * 256, 4096, "png", ["bin", "r", "g", "b"])
        run_case(tmp, "camerafloat", (camera.astype(np.float32) / 255.0), 50, "tif", ["bin", "count"])
        check_plot(tmp, coffee)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
