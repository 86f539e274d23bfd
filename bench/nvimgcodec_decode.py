"""nvImageCodec's JPEG decoding rate on a folder, the peer of imgpipe's read-ahead decoder: the files
read into memory first, then decoded to device RGB in batches (its hardware backend only, then its
default backends), synchronised, best of 3 after a warm-up; prints files/s and Mpix/s a row.
usage: nvimgcodec_decode.py DIR [BATCH ...]"""
import os
import sys
import time

from nvidia import nvimgcodec


def sync(images):
    # a host copy of the last image waits for the decoder's stream
    if images:
        images[-1].cpu()


def rate(decoder, data, batch, rounds=3):
    best = None
    for r in range(rounds + 1):
        t = time.perf_counter()
        pixels = 0
        for i in range(0, len(data), batch):
            images = decoder.decode(data[i:i + batch])
            if any(im is None for im in images):
                raise RuntimeError("a file did not decode")
            sync(images)
            pixels += sum(im.shape[0] * im.shape[1] for im in images)
        took = time.perf_counter() - t
        if r and (best is None or took < best):
            best = took
    return best, pixels


def main():
    folder = sys.argv[1]
    batches = [int(b) for b in sys.argv[2:]] or [64, 1]
    names = sorted(n for n in os.listdir(folder) if n.lower().endswith((".jpg", ".jpeg")))
    data = []
    for n in names:
        with open(os.path.join(folder, n), "rb") as f:
            data.append(f.read())
    mb = sum(len(d) for d in data) / len(data) / 1e6
    t = time.perf_counter()
    kinds = {"hardware": [nvimgcodec.Backend(nvimgcodec.BackendKind.HW_GPU_ONLY)], "default": None}
    decoders = {k: (nvimgcodec.Decoder(backends=b) if b else nvimgcodec.Decoder()) for k, b in kinds.items()}
    print("nvImageCodec %s: %d files, %.2f MB a file; decoders made in %.0f ms"
          % (nvimgcodec.__version__, len(data), mb, (time.perf_counter() - t) * 1e3))
    print("| nvImageCodec backend | batch | s | files/s | Mpix/s | ms a file |")
    print("| --- | --: | --: | --: | --: | --: |")
    for kind, dec in decoders.items():
        for b in batches:
            took, pixels = rate(dec, data, b)
            print("| %s | %d | %.3f | %.1f | %.0f | %.2f |"
                  % (kind, b, took, len(data) / took, pixels / took / 1e6, took / len(data) * 1e3))


if __name__ == "__main__":
    main()
