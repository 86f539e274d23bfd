# OpenCV side of bench/e2e.
#   e2e_peer.py info                  OpenCV's version, threads and whether it writes the TIFF predictor
#   e2e_peer.py run IN OUT RUNS       denoise.pipe's work RUNS times, each a fresh imread..imwrite;
#                                     prints the best time in seconds (Python's start-up not counted)
#   e2e_peer.py compare IMGPIPE_OUT OPENCV_OUT   one line: "ok ..." or "MISMATCH ..."
import math
import sys
import time

import cv2
import numpy as np

KERNEL = np.outer([1, 2, 1], [1, 2, 1]).astype(np.float32) / 16
HAS_PREDICTOR = hasattr(cv2, "IMWRITE_TIFF_PREDICTOR")


def write_params(path):
    ext = path.rsplit(".", 1)[1].lower()
    if ext == "png":
        return [cv2.IMWRITE_PNG_COMPRESSION, 6]
    if ext in ("jpg", "jpeg"):
        return [cv2.IMWRITE_JPEG_QUALITY, 90]
    params = [cv2.IMWRITE_TIFF_COMPRESSION, 8]  # 8: COMPRESSION_ADOBE_DEFLATE
    if HAS_PREDICTOR:
        params += [cv2.IMWRITE_TIFF_PREDICTOR, 2]  # 2: PREDICTOR_HORIZONTAL
    return params


def denoise_file(src, dst, params):
    img = cv2.imread(src, cv2.IMREAD_COLOR)
    if img is None:
        sys.exit("e2e_peer: cannot read " + src)
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    out = cv2.filter2D(cv2.medianBlur(gray, 3), -1, KERNEL, borderType=cv2.BORDER_REFLECT_101)
    if not cv2.imwrite(dst, out, params):
        sys.exit("e2e_peer: cannot write " + dst)


def run(src, dst, runs):
    params = write_params(dst)
    best = math.inf
    for _ in range(runs):
        start = time.perf_counter()
        denoise_file(src, dst, params)
        best = min(best, time.perf_counter() - start)
    print("%.4f" % best)


def compare(ours_path, theirs_path):
    ours = cv2.imread(ours_path, cv2.IMREAD_UNCHANGED)
    theirs = cv2.imread(theirs_path, cv2.IMREAD_UNCHANGED)
    if ours is None or theirs is None:
        print("MISMATCH cannot read %s" % (ours_path if ours is None else theirs_path))
        return
    if ours.shape != theirs.shape:
        print("MISMATCH shape %s vs OpenCV %s" % (ours.shape, theirs.shape))
        return
    diff = np.abs(ours.astype(np.int32) - theirs.astype(np.int32))
    mse = float(np.mean(diff.astype(np.float64) ** 2))
    psnr = math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)
    if ours_path.lower().endswith((".jpg", ".jpeg")):
        state = "ok" if psnr > 35 else "MISMATCH"
    else:
        state = "ok" if diff.max() <= 1 else "MISMATCH"
    print("%s max diff %d, %d pixels differ, PSNR %.1f dB" % (state, diff.max(), np.count_nonzero(diff), psnr))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "info":
        print("OpenCV %s, %d threads, TIFF predictor %s" % (cv2.__version__, cv2.getNumThreads(),
              "yes" if HAS_PREDICTOR else "no (this OpenCV has no IMWRITE_TIFF_PREDICTOR)"))
    elif mode == "run" and len(sys.argv) == 5:
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif mode == "compare" and len(sys.argv) == 4:
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: e2e_peer.py info | run IN OUT RUNS | compare IMGPIPE_OUT OPENCV_OUT")


if __name__ == "__main__":
    main()
