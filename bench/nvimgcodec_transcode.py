"""nvImageCodec's JPEG -> JPEG rate on a folder as a user's script would run it, the peer of an
imgpipe folder run without stages: each batch of files read, decoded on the GPU (hardware backend),
encoded to JPEG q90 on the GPU and written. Time it from outside for the whole process; it prints
its own time stamps (seconds from its start) to stderr.
usage: nvimgcodec_transcode.py IN_DIR OUT_DIR BATCH gray|rgb"""
import os
import sys
import time

T0 = time.perf_counter()


def stamp(what):
    print("    %-34s at %.3f" % (what, time.perf_counter() - T0), file=sys.stderr)


from nvidia import nvimgcodec  # noqa: E402  (its import is part of what a user waits for)


def decode_params(color):
    spec = getattr(nvimgcodec.ColorSpec, "GRAY" if color == "gray" else "SRGB", None)
    if spec is None:
        raise SystemExit("nvimgcodec_transcode: this nvImageCodec has no %s colour spec" % color)
    return nvimgcodec.DecodeParams(color_spec=spec)


def main():
    src, dst, batch, color = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    stamp("imported")
    decoder = nvimgcodec.Decoder(backends=[nvimgcodec.Backend(nvimgcodec.BackendKind.HW_GPU_ONLY)])
    stamp("decoder made")
    encoder = nvimgcodec.Encoder()
    stamp("encoder made")
    # without quality_type each plugin takes its own default quality and ignores quality_value
    enc_params = nvimgcodec.EncodeParams(quality_type=nvimgcodec.QualityType.QUALITY, quality_value=90)
    dec_params = decode_params(color)
    names = sorted(n for n in os.listdir(src) if n.lower().endswith((".jpg", ".jpeg")))
    os.makedirs(dst, exist_ok=True)
    written = 0
    for i in range(0, len(names), batch):
        part = names[i:i + batch]
        data = []
        for n in part:
            with open(os.path.join(src, n), "rb") as f:
                data.append(f.read())
        images = decoder.decode(data, params=dec_params)
        if any(im is None for im in images):
            raise RuntimeError("a file did not decode")
        if i == 0:
            stamp("first batch decoded")
        outs = encoder.encode(images, ".jpg", params=enc_params)
        for n, o in zip(part, outs):
            if o is None:
                raise RuntimeError("%s did not encode" % n)
            with open(os.path.join(dst, n), "wb") as f:
                f.write(o)
            written += 1
        if i == 0:
            stamp("first batch written")
    stamp("all %d written (%s, batches of %d)" % (written, color, batch))


if __name__ == "__main__":
    main()
