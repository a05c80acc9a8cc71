"""``seedcam-tools bundle keygen|model|firmware|sign|verify|inspect``: the update bundle commands.

Registered into the ``seedcam-tools`` parser by :func:`add_bundle_commands`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from seedcam.bundle import read_bundle, write_bundle

__all__ = ["add_bundle_commands"]

EXIT_OK = 0


def cmd_keygen(args: argparse.Namespace) -> int:
    from seedcam_tools.bundles import generate_keypair, write_keypair

    pair = generate_keypair()
    private, public = write_keypair(pair, args.out)
    sys.stdout.write(f"key id {pair.key_id}\nprivate key {private} (keep it secret)\npublic key {public}\n")
    return EXIT_OK


def _maybe_sign(bundle_path: Path, key: Path | None) -> None:
    if key is not None:
        from seedcam_tools.bundles import load_private_key, sign_file

        sign_file(bundle_path, load_private_key(key))


def cmd_model(args: argparse.Namespace) -> int:
    from seedcam_tools.bundles import build_model_bundle, default_precision

    bundle = build_model_bundle(
        args.model,
        precision=args.precision or default_precision(args.model),
        version=args.version,
        security_counter=args.counter,
        target=args.target,
        atol=args.atol,
    )
    write_bundle(bundle, args.out)
    _maybe_sign(args.out, args.key)
    sys.stdout.write(f"wrote {args.out}: {bundle.header.id} ({bundle.header.size} bytes payload)\n")
    return EXIT_OK


def cmd_from_tflite(args: argparse.Namespace) -> int:
    from seedcam_tools.byo import bundle_from_tflite, read_labels

    out = args.out or Path(args.model.stem)
    options = {
        k: v
        for k, v in {
            "coords": args.coords,
            "score_activation": args.score_activation,
            "activation": args.activation,
            "score_threshold": args.score_threshold,
            "iou_threshold": args.iou_threshold,
            "max_detections": args.max_detections,
        }.items()
        if v is not None
    }
    manifest = bundle_from_tflite(
        args.model,
        out,
        task=args.task,
        layout=args.layout,
        labels=read_labels(args.labels),
        sample_images=args.sample_images,
        anchors=args.anchors,
        mean=args.mean,
        std=args.std,
        color_order=args.color_order,
        crop_top=args.crop_top,
        crop_bottom=args.crop_bottom,
        model_id=args.id,
        name=args.name,
        version=args.version,
        options=options,
    )
    precision = manifest["default_precision"]
    sys.stdout.write(
        f"wrote {out}: {manifest['id']}@{manifest['version']} ({manifest['task']}, {precision}, input "
        f"{manifest['input']['shape']} mean {manifest['input']['mean']:g} std {manifest['input']['std']:g}, "
        f"golden frame {manifest['byo']['golden_frame']})\n"
    )
    return EXIT_OK


def cmd_firmware(args: argparse.Namespace) -> int:
    from seedcam_tools.bundles import build_firmware_bundle

    bundle = build_firmware_bundle(args.wheel, version=args.version, security_counter=args.counter, target=args.target)
    write_bundle(bundle, args.out)
    _maybe_sign(args.out, args.key)
    sys.stdout.write(f"wrote {args.out}: {bundle.header.id} ({bundle.header.size} bytes payload)\n")
    return EXIT_OK


def cmd_sign(args: argparse.Namespace) -> int:
    from seedcam_tools.bundles import load_private_key, sign_file

    written = sign_file(args.bundle, load_private_key(args.key), args.out)
    sys.stdout.write(f"signed {written}\n")
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from seedcam_tools.bundles import load_public_key, verify_file

    bundle = verify_file(args.bundle, [load_public_key(k) for k in args.pubkey])
    how = "signature not checked (no --pubkey)"
    if args.pubkey:
        assert bundle.signature is not None  # verify_file refuses an unsigned bundle when given keys
        how = f"signature by {bundle.signature.key_id} verified"
    sys.stdout.write(f"ok: {bundle.header.id}: payload intact, {how}\n")
    return EXIT_OK


def cmd_inspect(args: argparse.Namespace) -> int:
    from seedcam_tools.bundles import describe

    sys.stdout.write(json.dumps(describe(read_bundle(args.bundle, check=False)), indent=2) + "\n")
    return EXIT_OK


def cmd_bench_push(args: argparse.Namespace) -> int:
    from seedcam_tools.bench_push import format_push_table, run_push_benchmark

    report = run_push_benchmark(
        args.models,
        uart_bytes=args.uart_bytes,
        pty_pushes=args.pty_pushes,
        baud=args.baud,
        out_json=args.json,
        progress=not args.quiet,
    )
    sys.stdout.write(format_push_table(report) + "\n")
    if args.json:
        sys.stdout.write(f"wrote {args.json}\n")
    return EXIT_OK


def add_bundle_commands(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    bench: argparse._SubParsersAction | None = None,  # type: ignore[type-arg]
) -> None:
    """Add ``bundle ...`` to the ``seedcam-tools`` sub-commands (and ``push`` to ``bench``)."""
    bundle = commands.add_parser("bundle", help="make, sign, verify and inspect update bundles")
    which = bundle.add_subparsers(dest="bundle", required=True)

    keygen = which.add_parser("keygen", help="make an ed25519 signing key pair: OUT.key and OUT.pub")
    keygen.add_argument("out", type=Path, help="file stem, e.g. keys/release")
    keygen.set_defaults(func=cmd_keygen)

    def identity(p: argparse.ArgumentParser) -> None:
        p.add_argument("-o", "--out", type=Path, required=True, help="bundle file to write")
        p.add_argument("--version", help="bundle version (default: the model's or wheel's)")
        p.add_argument("--counter", type=int, default=0, help="security counter (anti-rollback), default 0")
        p.add_argument("--target", default="any", help="board the bundle is for (default any)")
        p.add_argument("--key", type=Path, help="sign with this private key (.key)")

    model = which.add_parser("model", help="make a model bundle from a model folder (manifest.json + files)")
    model.add_argument("model", type=Path, help="model folder, e.g. models/lane")
    model.add_argument("--precision", choices=("int8", "float32"), help="default: the manifest's default_precision")
    model.add_argument("--atol", type=float, default=0.02, help="self-test tolerance (absolute), default 0.02")
    identity(model)
    model.set_defaults(func=cmd_model)

    byo = which.add_parser(
        "from-tflite", help="make a model folder (manifest + golden files) from any .tflite, without TensorFlow"
    )
    byo.add_argument("model", type=Path, help="the .tflite file")
    byo.add_argument("--task", choices=("detect", "classify"), required=True)
    byo.add_argument("--layout", choices=("yolov8", "yolov5", "ssd_anchors", "tflite_postprocess"), help="detect only")
    byo.add_argument("--labels", type=Path, required=True, help="class names, one a line")
    byo.add_argument(
        "--sample-images", type=Path, help="image folder (or file) for the golden frame; default synthetic"
    )
    byo.add_argument("--out", type=Path, help="bundle folder to write (default: the model's stem)")
    byo.add_argument("--anchors", type=Path, help="ssd_anchors: N x 4 (cy, cx, h, w) .npy file")
    byo.add_argument("--mean", type=float, help="input normalisation (default: from the input quantisation, else 0)")
    byo.add_argument("--std", type=float, help="input normalisation (default: from the input quantisation, else 255)")
    byo.add_argument("--color-order", choices=("RGB", "BGR"), default="RGB")
    byo.add_argument("--crop-top", type=float, default=0.0, help="fraction of the frame cut at the top")
    byo.add_argument("--crop-bottom", type=float, default=0.0, help="fraction of the frame cut at the bottom")
    byo.add_argument("--id", help="model id (default: the file's stem)")
    byo.add_argument("--name", help="human-readable model name")
    byo.add_argument("--version", default="1.0.0")
    byo.add_argument("--coords", choices=("pixels", "normalized"), help="YOLO box units (default: guessed)")
    byo.add_argument("--score-activation", choices=("none", "sigmoid", "softmax"), help="detector scores (guessed)")
    byo.add_argument("--activation", choices=("none", "sigmoid", "softmax"), help="classifier output (guessed)")
    byo.add_argument("--score-threshold", type=float)
    byo.add_argument("--iou-threshold", type=float)
    byo.add_argument("--max-detections", type=int)
    byo.set_defaults(func=cmd_from_tflite)

    firmware = which.add_parser("firmware", help="make a firmware bundle from a seedcam_firmware wheel")
    firmware.add_argument("wheel", type=Path)
    identity(firmware)
    firmware.set_defaults(func=cmd_firmware)

    sign = which.add_parser("sign", help="sign a bundle (in place unless -o)")
    sign.add_argument("bundle", type=Path)
    sign.add_argument("--key", type=Path, required=True, help="private key file (.key)")
    sign.add_argument("-o", "--out", type=Path)
    sign.set_defaults(func=cmd_sign)

    verify = which.add_parser("verify", help="check payload hashes and (with --pubkey) the signature")
    verify.add_argument("bundle", type=Path)
    verify.add_argument("--pubkey", action="append", default=[], help="trusted public key: .pub file or 64 hex digits")
    verify.set_defaults(func=cmd_verify)

    inspect = which.add_parser("inspect", help="print a bundle's manifest as JSON")
    inspect.add_argument("bundle", type=Path)
    inspect.set_defaults(func=cmd_inspect)

    if bench is not None:
        push = bench.add_parser("push", help="bundle push throughput: line-rate ratio at 115200 baud, MB/s on a pty")
        push.add_argument("--models", type=Path, default=Path("models"), help="folder holding lane/ (default models)")
        push.add_argument("--uart-bytes", type=int, default=120_000, help="payload bytes pushed at the baud rate")
        push.add_argument("--pty-pushes", type=int, default=3, help="pushes of the 1.1 MB float32 bundle on a pty")
        push.add_argument("--baud", type=int, default=115200)
        push.add_argument("--json", type=Path, default=Path("bench-push.json"))
        push.add_argument("-q", "--quiet", action="store_true")
        push.set_defaults(func=cmd_bench_push)
