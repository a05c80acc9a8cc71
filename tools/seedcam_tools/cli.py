"""``seedcam-tools``: generate code, train, evaluate and benchmark seedcam models.

Exit codes: 0 success, 1 user error or failed check, 2 internal failure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path
from typing import Any

from seedcam.errors import SensorError
from seedcam_tools.bench_cli import add_bench_commands
from seedcam_tools.bundle_cli import add_bundle_commands
from seedcam_tools.catalog_build import add_catalog_commands
from seedcam_tools.detect import DETECT_VERSION
from seedcam_tools.export import bundle_id
from seedcam_tools.extract import add_extract_commands
from seedcam_tools.lane import LANE_VERSION
from seedcam_tools.ocr import OCR_VERSION

__all__ = ["main"]

EXIT_OK, EXIT_USER, EXIT_FAIL = 0, 1, 2


def find_repo_root(start: Path | None = None) -> Path:
    """The nearest folder above ``start`` holding ``proto/seedcam``.

    Raises:
        ValueError: not inside a seedcam checkout.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "proto" / "seedcam").is_dir():
            return folder
    raise ValueError(f"{here} is not inside a seedcam checkout (no proto/seedcam above it)")


def cmd_proto(args: argparse.Namespace) -> int:
    from seedcam_tools.protogen import stale_files, write_generated

    root = find_repo_root()
    if args.check:
        stale = stale_files(root)
        for path in stale:
            print(f"stale: {path}")
        return EXIT_USER if stale else EXIT_OK
    for path in write_generated(root):
        print(f"wrote {path}")
    return EXIT_OK


def cmd_train_lane(args: argparse.Namespace) -> int:
    """Generate scenes → train → convert (float32) → quantize (INT8) → evaluate → bundle."""
    from seedcam_tools.lane.ship import ship_lane_bundle
    from seedcam_tools.lane.train import train_lane

    work = args.work or args.out.parent / f"{args.out.name}-training"
    trained = train_lane(
        work,
        seed=args.seed,
        samples=args.samples,
        first_scene=args.first_scene,
        epochs=args.epochs,
        progress=not args.quiet,
        random_fraction=args.random_world,
        init_from=args.init_from,
        lr=args.lr,
        width_mult=args.width_mult,
        blocks=args.blocks,
        one_line_weight=args.one_line_weight,
        init_width_mult=args.init_width_mult,
        compute=args.compute,
    )
    metrics = ship_lane_bundle(
        work / "lane.keras",
        args.out,
        eval_samples=args.eval_samples,
        train_info=dataclasses.asdict(trained),
        random_fraction=args.random_world,
        version=args.version,
    )
    print(json.dumps(metrics["heldout"], indent=2, default=str))
    print(f"bundle written to {args.out}; metrics in {args.out / 'metrics.json'}")
    return EXIT_OK


def cmd_eval_lane(args: argparse.Namespace) -> int:
    from seedcam_firmware.inference.manifest import load_manifest
    from seedcam_tools.lane.evaluate import evaluate_lane

    manifest = load_manifest(args.model, precision=args.precision)  # checks the file's sha256 too
    if args.data is None and args.world == "classic":  # the classic held-out scenes, as the bundle's metrics
        report = evaluate_lane(manifest.file, seed=args.seed, samples=args.samples)
    else:
        from seedcam_tools.frame_eval import lane_on_frames

        frames = _frames(args, "lane", camera=manifest.camera)
        report = {**_frames_source(args), **lane_on_frames(args.model, frames, precision=args.precision)}
    print(json.dumps(_plain(report), indent=2))
    return EXIT_OK


def _training_facts(keras_path: Path) -> dict[str, Any]:
    """The ``train_metrics.json`` written beside a trained Keras model, or ``{}``."""
    info_path = keras_path.parent / "train_metrics.json"
    return json.loads(info_path.read_text()) if info_path.is_file() else {}


def cmd_train_detector(args: argparse.Namespace) -> int:
    """Generate scenes → train → convert (float32) → quantize (INT8) → held-out mAP → bundle."""
    from seedcam_tools.detect.ship import ship_detector_bundle

    work = args.work or args.out.parent / f"{args.out.name}-training"
    if args.keras is not None:  # bundle a detector trained earlier (e.g. on a GPU machine, --train-only)
        keras_path = args.keras
        trained = _training_facts(keras_path)
    else:
        from seedcam_tools.detect.train import train_detector

        trained = train_detector(
            work,
            seed=args.seed,
            samples=args.samples,
            first_scene=args.first_scene,
            epochs=args.epochs,
            lr=args.lr,
            init_from=args.init_from,
            width=args.width,
            blocks=args.blocks,
            batch_size=args.batch_size,
            workers=args.workers,
            progress=not args.quiet,
            random_fraction=args.random_world,
            own_data=args.data,
            own_fraction=args.data_fraction,
            init_width=args.init_width,
            compute=args.compute,
        )
        keras_path = work / "detector.keras"
        if args.train_only:
            print(json.dumps(trained, indent=2))
            print(f"trained detector saved as {keras_path}; bundle it with --keras {keras_path}")
            return EXIT_OK
    metrics = ship_detector_bundle(
        keras_path, args.out, eval_samples=args.eval_samples, train_info=trained, version=args.version
    )
    print(json.dumps(metrics["summary"], indent=2))
    print(f"bundle written to {args.out}; metrics in {args.out / 'metrics.json'}")
    return EXIT_OK


def _frames(args: argparse.Namespace, kind: str, camera: dict[str, float] | None = None):  # noqa: ANN202
    """The labelled frames an eval command reads: ``--data DIR``, else held-out frames of ``--world``."""
    from seedcam_tools.frames import folder_frames, heldout_frames

    if args.data is not None:
        return folder_frames(args.data, kind, camera=camera)
    return heldout_frames(args.world, args.seed, args.samples, plate_focus=kind == "ocr")


def _frames_source(args: argparse.Namespace) -> dict[str, Any]:
    """Which frames an eval command scored (:func:`_frames`), for its report: the folder, or world and block."""
    if args.data is not None:
        return {"data": str(args.data)}
    return {"world": args.world, "block": args.seed}


def cmd_eval_detector(args: argparse.Namespace) -> int:
    from seedcam_tools.detect.evaluate import evaluate_detector
    from seedcam_tools.frame_eval import detector_on_frames

    if args.data is None and args.world == "classic":  # the classic held-out blocks, as the bundle's metrics
        report = evaluate_detector(args.model, precision=args.precision, samples=args.samples, seed=args.seed)
    else:
        report = {
            **_frames_source(args),
            **detector_on_frames(args.model, _frames(args, "detect"), precision=args.precision),
        }
    print(json.dumps(_plain(report), indent=2))
    return EXIT_OK


def cmd_train_classifier(args: argparse.Namespace) -> int:
    """Folder of class subfolders → train → float32 + INT8 bundle → held-out accuracy → metrics.json."""
    from seedcam_tools.classify.train import parse_input_size, train_classifier

    metrics = train_classifier(
        args.data,
        args.out,
        seed=args.seed,
        epochs=args.epochs,
        val_dir=args.val_data,
        name=args.name,
        input_spec=parse_input_size(args.input_size),
        flip=args.flip,
        work_dir=args.work or args.out.parent / f"{args.out.name}-training",
        progress=not args.quiet,
    )
    print(json.dumps(metrics["summary"], indent=2))
    print(f"bundle written to {args.out}; metrics in {args.out / 'metrics.json'}")
    return EXIT_OK


def cmd_gen_classifier_data(args: argparse.Namespace) -> int:
    """Render the synthetic road-scene classes into class folders."""
    from seedcam_tools.classify.data import write_road_scene_folder

    counts = write_road_scene_folder(
        args.out, per_class=args.per_class, seed=args.seed, image_format=args.format, progress=not args.quiet
    )
    print(f"wrote {sum(counts.values())} images of {len(counts)} classes to {args.out}")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    """Measure every bundle under --models and write the markdown report."""
    from seedcam_tools.report import write_report

    out = args.out or args.models / "REPORT.md"
    report = write_report(
        args.models,
        out,
        invokes=args.invokes,
        progress=not args.quiet,
        references=args.reference,
        json_out=args.json,
    )
    rows = sum(len(m.rows) for m in report.models)
    print(f"wrote {out}: {len(report.models)} model(s), {rows} row(s), {len(report.skipped)} not measured")
    return EXIT_OK


def cmd_train_ocr(args: argparse.Namespace) -> int:
    """Render plate crops → train the CRNN → convert (float32) → quantize (INT8) → held-out accuracy → bundle."""
    from seedcam_tools.ocr.ship import ship_ocr_bundle

    work = args.work or args.out.parent / f"{args.out.name}-training"
    facts = _training_facts(args.keras) if args.keras is not None else {}
    # a bundled model is validated and calibrated on its own training mix unless told otherwise
    random_world = args.random_world if args.random_world is not None else facts.get("random_world_fraction", 0.0)
    command = (
        f"seedcam-tools train-ocr --out {args.out} --seed {args.seed} --samples {args.samples} "
        + (f"--first-crop {args.first_crop} " if args.first_crop else "")
        + f"--epochs {args.epochs} --lr {args.lr:g} --random-world {random_world:g} "
        + (f"--init-from {args.init_from} " if args.init_from else "")
        + (f"--width-mult {args.width_mult:g} " if args.width_mult != 1.0 else "")
        + (f"--context-blocks {args.context_blocks} " if args.context_blocks != 3 else "")
        + (f"--residual-blocks {args.residual_blocks} " if args.residual_blocks else "")
        + (f"--init-width-mult {args.init_width_mult:g} " if args.init_width_mult is not None else "")
        + (f"--compute {args.compute} " if args.compute != "auto" else "")
        + f"--eval-samples {args.eval_samples} --version {args.version}"
    )
    if args.keras is not None:  # bundle a model trained earlier
        keras_path = args.keras
        bundled = (
            f"seedcam-tools train-ocr --keras {keras_path} --out {args.out} --eval-samples {args.eval_samples} "
            f"--version {args.version}"
        )
        info = {**facts, "command": facts.get("command", bundled), "bundled_by": bundled}
    else:
        from seedcam_tools.ocr.train import train_ocr

        trained = train_ocr(
            work,
            seed=args.seed,
            samples=args.samples,
            first_crop=args.first_crop,
            epochs=args.epochs,
            lr=args.lr,
            progress=not args.quiet,
            random_fraction=random_world,
            init_from=args.init_from,
            width_mult=args.width_mult,
            context_blocks=args.context_blocks,
            residual_blocks=args.residual_blocks,
            init_width_mult=args.init_width_mult,
            compute=args.compute,
        )
        keras_path = work / "ocr.keras"
        info = {**trained.to_dict(), "command": command}
    metrics = ship_ocr_bundle(
        keras_path,
        args.out,
        eval_samples=args.eval_samples,
        calibration_samples=min(500, args.samples),  # training crops; a toy run calibrates on the minimum, 100
        train_info=info,
        random_fraction=random_world,
        confidence_samples=min(2000, max(200, args.samples // 10)),
        version=args.version,
    )
    print(json.dumps({**metrics["summary"], "int8_speedup": metrics["speed"]["int8_speedup"]}, indent=2))
    print(f"bundle written to {args.out}; metrics in {args.out / 'metrics.json'}")
    return EXIT_OK


def cmd_eval_ocr(args: argparse.Namespace) -> int:
    from seedcam_firmware.inference.manifest import load_manifest
    from seedcam_tools.ocr.data import Look
    from seedcam_tools.ocr.evaluate import evaluate_ocr

    manifest = load_manifest(args.model, precision=args.precision)  # checks the file's sha256 too
    if args.data is None and args.world == "classic":  # the classic held-out crops, as the bundle's metrics
        look = Look(full_blur=args.full_blur, max_forward_m=args.max_forward)
        report = evaluate_ocr(manifest.file, seed=args.seed, samples=args.samples, look=look)
    else:
        from seedcam_tools.frame_eval import ocr_on_frames

        detector = args.detector if args.detector is not None and args.detector.exists() else None
        report = {
            **_frames_source(args),
            **ocr_on_frames(args.model, _frames(args, "ocr"), precision=args.precision, detect_bundle=detector),
        }
    print(json.dumps(_plain(report), indent=2))
    return EXIT_OK


def cmd_eval_worlds(args: argparse.Namespace) -> int:
    """Score the detect, ocr and lane bundles on our randomized and the independent world; into metrics.json."""
    from seedcam_tools.cross_world import evaluate_worlds, world_text

    results = evaluate_worlds(args.models, samples=args.samples, tasks=tuple(args.tasks.split(",")))
    for folder, section in results.items():
        for world in section:
            for precision in ("float32", "int8"):
                text = world_text({"worlds": section}, world, precision)
                print(f"{folder:7s} {world:7s} {precision:8s} {text}")
    print(f"wrote the worlds section of {', '.join(f'{args.models}/{f}/metrics.json' for f in results)}")
    return EXIT_OK


def cmd_ablate_world(args: argparse.Namespace) -> int:
    """Score a bundle on our randomized world with every factor, then without each in turn."""
    from seedcam_tools.world_ablation import ablate_world, format_ablation

    factors = args.factors.split(",") if args.factors else None

    def progress(name: str) -> None:
        if not args.quiet:
            print(f"{args.task}: {name} ({args.frames} frames)", file=sys.stderr, flush=True)

    report = ablate_world(
        args.models,
        args.task,
        frames=args.frames,
        block=args.block,
        factors=factors,
        precision=args.precision,
        add_one=args.add_one,
        progress=progress,
    )
    print(format_ablation(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    return EXIT_OK


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _add_version_argument(parser: argparse.ArgumentParser, family: str, default: str) -> None:
    """``--version`` of a train command: the version of the bundle it writes, whose major number names it."""
    parser.add_argument(
        "--version",
        default=default,
        help=f"the bundle's version; its major number names it (default {default}: {bundle_id(family, default)})",
    )


def _add_compute_argument(parser: argparse.ArgumentParser) -> None:
    """``--compute`` of a train command: the activations' precision while training (the weights stay float32)."""
    from seedcam_tools.train_speed import COMPUTE_CHOICES

    parser.add_argument(
        "--compute",
        choices=COMPUTE_CHOICES,
        default="auto",
        help="precision of the activations while training: bfloat16 trains faster on a CPU with AMX "
        "(auto, the default, picks it there, float32 elsewhere); the weights and the exported model stay float32",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seedcam-tools", description="seedcam model and protocol tools")
    parser.add_argument("-v", "--verbose", action="store_true")
    commands = parser.add_subparsers(dest="command", required=True)

    proto = commands.add_parser("proto", help="regenerate the committed protobuf code")
    proto.add_argument("--check", action="store_true", help="only report stale files (exit 1 if any)")
    proto.set_defaults(func=cmd_proto)

    train = commands.add_parser("train-lane", help="generate scenes, train, convert, quantize, bundle the lane model")
    train.add_argument("--out", type=Path, default=Path("models/lane"), help="bundle folder (default models/lane)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--samples", type=int, default=48000, help="training scenes")
    train.add_argument(
        "--first-scene",
        type=int,
        default=0,
        help="seed of the first training scene (default 0); give a continued round fresh scenes",
    )
    train.add_argument("--epochs", type=int, default=6)
    train.add_argument(
        "--init-from",
        type=Path,
        help="continue this saved lane.keras, or a float32 .tflite of the --width-mult/--blocks architecture",
    )
    train.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (default 0.002)")
    train.add_argument(
        "--width-mult",
        type=float,
        default=2.0,
        help="channel scale of a fresh model (default 2.0, lane-v3; lane-v2: 1.0)",
    )
    train.add_argument(
        "--blocks",
        type=int,
        default=2,
        help="extra 3x3 convolutions per scale of a fresh model (default 2, lane-v3; lane-v2: 0)",
    )
    train.add_argument(
        "--init-width-mult",
        type=float,
        metavar="W",
        help="the channel scale the --init-from .tflite was trained at, when below --width-mult: "
        "its network is widened to --width-mult computing the same function (Net2WiderNet), then trained",
    )
    train.add_argument(
        "--one-line-weight",
        type=float,
        default=1.0,
        metavar="W",
        help="lane-state loss weight of scenes with one line in view, against 1 for both (default 1)",
    )
    train.add_argument(
        "--random-world",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="fraction of scenes from the randomized training world (default 0: the classic renderer only)",
    )
    train.add_argument("--work", type=Path, help="folder for the Keras model and training logs")
    train.add_argument("--eval-samples", type=int, default=1000, help="held-out scenes for the metrics")
    _add_version_argument(train, "lane", LANE_VERSION)
    _add_compute_argument(train)
    train.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    train.set_defaults(func=cmd_train_lane)

    evaluate = commands.add_parser("eval-lane", help="accuracy of a lane bundle on freshly generated held-out scenes")
    evaluate.add_argument("--model", type=Path, default=Path("models/lane"), help="bundle folder or its manifest.json")
    evaluate.add_argument("--precision", choices=("int8", "float32"), default="int8")
    evaluate.add_argument("--seed", type=int, default=0, help="which held-out seed block (never used in training)")
    evaluate.add_argument("--samples", type=int, default=1000)
    evaluate.add_argument(
        "--world",
        choices=("classic", "random", "other"),
        default="classic",
        help="held-out frames of our classic world (default), our randomized world, or the independent world",
    )
    evaluate.add_argument(
        "--data", type=Path, help="a labelled lane folder (lane.jsonl + camera.json) instead of rendered frames"
    )
    evaluate.set_defaults(func=cmd_eval_lane)

    det = commands.add_parser("train-detector", help="generate scenes, train, convert, quantize, bundle the detector")
    det.add_argument("--out", type=Path, default=Path("models/detect"), help="bundle folder (default models/detect)")
    det.add_argument("--seed", type=int, default=0)
    det.add_argument("--samples", type=int, default=40000, help="training scenes (default 40000)")
    det.add_argument(
        "--first-scene",
        type=int,
        default=0,
        help="seed of the first training scene (default 0); give a continued round fresh scenes",
    )
    det.add_argument("--epochs", type=int, default=32)
    det.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default 0.003)")
    det.add_argument("--width", type=float, default=1.5, help="channel scale of a fresh detector (default 1.5, v2)")
    det.add_argument(
        "--blocks",
        type=int,
        default=4,
        help="residual blocks per feature level (default 4, detect-v5); a shallower --init-from .tflite is deepened",
    )
    det.add_argument("--batch-size", type=int, default=96)
    det.add_argument("--workers", type=int, default=1, help="threads that build training batches")
    det.add_argument(
        "--train-only", action="store_true", help="stop after training (no TensorFlow needed: any Keras backend)"
    )
    det.add_argument("--keras", type=Path, help="skip training: bundle this trained detector.keras")
    det.add_argument(
        "--random-world",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="fraction of scenes from the randomized training world (default 0: the classic renderer only)",
    )
    det.add_argument(
        "--init-from",
        type=Path,
        help="continue training from this saved detector.keras, or a shipped float32 .tflite, instead of fresh weights",
    )
    det.add_argument(
        "--init-width",
        type=float,
        metavar="W",
        help="the channel scale the --init-from .tflite was trained at, when below --width: "
        "its network is widened to --width computing the same function (Net2WiderNet), then trained",
    )
    det.add_argument("--data", type=Path, help="your own labelled frames (YOLO folder or COCO .json) to mix in")
    det.add_argument(
        "--data-fraction", type=float, default=0.3, help="share of the training set made of --data (default 0.3)"
    )
    det.add_argument("--work", type=Path, help="folder for the Keras model and training logs")
    det.add_argument("--eval-samples", type=int, default=1000, help="held-out scenes for the metrics")
    _add_version_argument(det, "detect", DETECT_VERSION)
    _add_compute_argument(det)
    det.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    det.set_defaults(func=cmd_train_detector)

    det_eval = commands.add_parser("eval-detector", help="mAP@0.5 of a detector bundle on fresh held-out scenes")
    det_eval.add_argument("--model", type=Path, default=Path("models/detect"), help="bundle folder")
    det_eval.add_argument("--precision", choices=("int8", "float32"), default="int8")
    det_eval.add_argument("--seed", type=int, default=0, help="which held-out seed block (never used in training)")
    det_eval.add_argument("--samples", type=int, default=1000)
    det_eval.add_argument(
        "--world",
        choices=("classic", "random", "other"),
        default="classic",
        help="held-out frames of our classic world (default), our randomized world, or the independent world",
    )
    det_eval.add_argument(
        "--data", type=Path, help="a labelled YOLO folder (data.yaml) or COCO .json instead of rendered frames"
    )
    det_eval.set_defaults(func=cmd_eval_detector)

    worlds = commands.add_parser(
        "eval-worlds", help="score every bundle on our randomized and the independent world (into metrics.json)"
    )
    worlds.add_argument("--models", type=Path, default=Path("models"), help="folder of bundle folders")
    worlds.add_argument("--samples", type=int, default=1000, help="frames per world (default 1000)")
    worlds.add_argument("--tasks", default="detect,ocr,lane", help="which bundles (default detect,ocr,lane)")
    worlds.set_defaults(func=cmd_eval_worlds)

    from seedcam_tools.world import WORLD_FACTORS
    from seedcam_tools.world_ablation import ABLATION_BLOCK, ABLATION_TASKS

    ablate = commands.add_parser(
        "ablate-world",
        help="what each factor of our randomized world costs a bundle: held-out frames with and without it",
        description="factors: " + "; ".join(f"{name}: {what}" for name, what in WORLD_FACTORS.items()),
    )
    ablate.add_argument("--task", choices=ABLATION_TASKS, required=True)
    ablate.add_argument("--models", type=Path, default=Path("models"), help="folder of bundle folders")
    ablate.add_argument("--frames", type=int, default=300, help="held-out frames per run (default 300)")
    ablate.add_argument(
        "--block", type=int, default=ABLATION_BLOCK, help=f"held-out seed block (default {ABLATION_BLOCK})"
    )
    ablate.add_argument("--factors", help="comma-separated factors to leave out one at a time (default: all)")
    ablate.add_argument("--precision", choices=("int8", "float32"), default="int8")
    ablate.add_argument(
        "--add-one",
        action="store_true",
        help="also score the world with none of the factors but one, for each (what it costs on its own)",
    )
    ablate.add_argument("--json", type=Path, help="also write the report as JSON")
    ablate.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    ablate.set_defaults(func=cmd_ablate_world)

    clf = commands.add_parser("train-classifier", help="train an image classifier from DATA/<class>/<image> folders")
    clf.add_argument("--data", type=Path, required=True, help="training images, one subfolder per class")
    clf.add_argument("--out", type=Path, required=True, help="bundle folder")
    clf.add_argument("--seed", type=int, default=0)
    clf.add_argument("--epochs", type=int, default=30)
    clf.add_argument("--val-data", type=Path, help="held-out images (same class folders) to report instead of a split")
    clf.add_argument("--name", help="model name (manifest id NAME-v1); default: the data folder's name")
    clf.add_argument("--input-size", default="96x96", help="model input WIDTHxHEIGHT (default 96x96)")
    clf.add_argument("--flip", action="store_true", help="augment with left-right flips (wrong for left/right classes)")
    clf.add_argument("--work", type=Path, help="folder for the Keras model")
    clf.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    clf.set_defaults(func=cmd_train_classifier)

    gen = commands.add_parser("gen-classifier-data", help="render synthetic road-scene class folders (example data)")
    gen.add_argument("--out", type=Path, required=True)
    gen.add_argument("--per-class", type=int, default=1500)
    gen.add_argument("--seed", type=int, default=0, help="seed base: 0 for training, >= 10000000 for held-out")
    gen.add_argument("--format", choices=("png", "jpg"), default="png")
    gen.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    gen.set_defaults(func=cmd_gen_classifier_data)

    rep = commands.add_parser("report", help="write models/REPORT.md: accuracy, size, latency of every bundle")
    rep.add_argument("--models", type=Path, default=Path("models"), help="folder of bundle folders")
    rep.add_argument("--out", type=Path, help="markdown file (default MODELS/REPORT.md)")
    rep.add_argument("--invokes", type=int, default=200, help="timed invokes per file and thread count")
    rep.add_argument(
        "--reference",
        type=Path,
        nargs="*",
        help="latency files measured on other machines to add (default: MODELS/latency/*.json)",
    )
    rep.add_argument("--json", type=Path, help="also write this machine's measurements as such a latency file")
    rep.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    rep.set_defaults(func=cmd_report)

    ocr = commands.add_parser("train-ocr", help="render plate crops, train, convert, quantize, bundle the OCR model")
    ocr.add_argument("--out", type=Path, default=Path("models/ocr"), help="bundle folder (default models/ocr)")
    ocr.add_argument("--seed", type=int, default=0)
    ocr.add_argument("--samples", type=int, default=40000, help="training plate crops")
    ocr.add_argument(
        "--first-crop",
        type=int,
        default=0,
        help="seed of the first training crop (default 0); give a continued round fresh crops",
    )
    ocr.add_argument("--epochs", type=int, default=8)
    ocr.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (default 0.002)")
    ocr.add_argument(
        "--random-world",
        type=float,
        default=None,
        metavar="FRACTION",
        help="fraction of crops from the randomized training world (default 0: the classic renderer only; "
        "with --keras, the trained model's own mix, for its validation and confidence calibration)",
    )
    ocr.add_argument(
        "--init-from", type=Path, help="continue from this ocr.keras, or a float32 .tflite of the same architecture"
    )
    ocr.add_argument(
        "--width-mult",
        type=float,
        default=1.0,
        help="channel multiplier of a fresh model (default 1: the shipped width; ignored when continuing a .keras)",
    )
    ocr.add_argument(
        "--context-blocks",
        type=int,
        default=3,
        help="residual 1x3 convolutions over time (default 3, as ocr-v3; more start as the identity)",
    )
    ocr.add_argument(
        "--residual-blocks",
        type=int,
        default=0,
        help="residual 3x3 blocks after each of the two last stages (default 0, as ocr-v3); "
        "a shallower --init-from .tflite is deepened",
    )
    ocr.add_argument(
        "--init-width-mult",
        type=float,
        metavar="W",
        help="the channel multiplier the --init-from .tflite was trained at, when below --width-mult: "
        "its network is widened to --width-mult computing the same function (Net2WiderNet), then trained",
    )
    ocr.add_argument("--keras", type=Path, help="skip training: bundle this trained ocr.keras")
    ocr.add_argument("--work", type=Path, help="folder for the Keras model and training logs")
    ocr.add_argument("--eval-samples", type=int, default=1000, help="held-out crops for the metrics")
    ocr.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    _add_compute_argument(ocr)
    _add_version_argument(ocr, "ocr", OCR_VERSION)
    ocr.set_defaults(func=cmd_train_ocr)

    ocr_eval = commands.add_parser("eval-ocr", help="line accuracy of an OCR bundle on fresh held-out plate crops")
    ocr_eval.add_argument("--model", type=Path, default=Path("models/ocr"), help="bundle folder or its manifest.json")
    ocr_eval.add_argument("--precision", choices=("int8", "float32"), default="int8")
    ocr_eval.add_argument("--seed", type=int, default=0, help="which held-out seed block (never used in training)")
    ocr_eval.add_argument("--samples", type=int, default=1000)
    ocr_eval.add_argument("--max-forward", type=float, default=0.55, help="farthest plate, m (acceptance: 0.55)")
    ocr_eval.add_argument("--full-blur", action="store_true", help="random_scene's unscaled blur (harder look)")
    ocr_eval.add_argument(
        "--world",
        choices=("classic", "random", "other"),
        default="classic",
        help="held-out frames of our classic world (default), our randomized world, or the independent world",
    )
    ocr_eval.add_argument("--data", type=Path, help="a labelled plate folder (ocr.jsonl) instead of rendered frames")
    ocr_eval.add_argument(
        "--detector",
        type=Path,
        default=Path("models/detect"),
        help="detector bundle for the two-stage figure with --data / --world (default models/detect)",
    )
    ocr_eval.set_defaults(func=cmd_eval_ocr)

    which = add_bench_commands(commands)  # bench pipeline, bench visionseed
    add_bundle_commands(commands, bench=which)  # update bundles, and `bench push`
    add_catalog_commands(commands)  # catalog build|verify: signed bundles and catalog.json
    add_extract_commands(commands)  # extract: a recording's frames and detections as a YOLO folder
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    try:
        return args.func(args)
    except (ValueError, SensorError, OSError) as exc:
        print(f"seedcam-tools: error: {exc}", file=sys.stderr)
        return EXIT_USER
    except KeyboardInterrupt:
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
