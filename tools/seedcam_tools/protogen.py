"""Generate the committed Python code for the wire schema, and check it is fresh.

The schema lives in ``proto/seedcam/v1/``; its generated modules are committed
in the SDK's private package ``seedcam._proto`` so that the SDK installs with
nothing but the protobuf runtime. The VisionSeed schema copy
(``proto/visionseed/``) is spoken by the firmware only, so its module is
committed in the firmware's private package ``seedcam_firmware.visionseed._proto``.
``grpcio-tools`` (pinned in this package's dependencies) provides ``protoc``, so
every developer generates byte-identical code.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from seedcam.errors import SensorError

__all__ = [
    "OUTPUT_DIR",
    "OUTPUT_DIRS",
    "PROTO_DIR",
    "SCHEMAS",
    "VISIONSEED_OUTPUT_DIR",
    "GeneratedFile",
    "ProtoGenError",
    "generate",
    "stale_files",
    "write_generated",
]

PROTO_DIR = Path("proto")
#: the SDK's private package of generated code (the native wire schema)
OUTPUT_DIR = Path("host_sdk/seedcam/_proto")
#: the firmware's VisionSeed personality's private package (its schema copy)
VISIONSEED_OUTPUT_DIR = Path("firmware/seedcam_firmware/visionseed/_proto")

#: schema files (relative to the proto root) and the module each becomes (repo path without ``.py``/``.pyi``)
SCHEMAS: dict[str, Path] = {
    "seedcam/v1/seedcam.proto": OUTPUT_DIR / "seedcam_pb2",
    "visionseed/visionseed.proto": VISIONSEED_OUTPUT_DIR / "visionseed_pb2",
}
#: every folder that holds generated code
OUTPUT_DIRS: tuple[Path, ...] = tuple(dict.fromkeys(module.parent for module in SCHEMAS.values()))


class ProtoGenError(SensorError):
    """protoc failed on the schema."""


@dataclass(frozen=True)
class GeneratedFile:
    """One generated file: where it belongs in the repo, and its content."""

    path: Path
    content: bytes


def generate(repo_root: Path) -> list[GeneratedFile]:
    """Run protoc on the schema and return the files it produces.

    Raises:
        ProtoGenError: protoc reported an error.
    """
    proto_root = repo_root / PROTO_DIR
    files: list[GeneratedFile] = []
    with tempfile.TemporaryDirectory() as tmp:
        for schema, module in SCHEMAS.items():
            # protoc runs in its own process: in-process it can crash beside TensorFlow's protobuf copy
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "grpc_tools.protoc",
                    f"-I{proto_root}",
                    f"--python_out={tmp}",
                    f"--pyi_out={tmp}",
                    str(proto_root / schema),
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if done.returncode != 0:
                raise ProtoGenError(f"protoc failed on {schema} (exit {done.returncode}): {done.stderr.strip()}")
            stem = Path(schema).with_suffix("")
            for suffix in (".py", ".pyi"):
                produced = Path(tmp) / f"{stem}_pb2{suffix}"
                files.append(GeneratedFile(module.with_name(module.name + suffix), produced.read_bytes()))
    return files


def write_generated(repo_root: Path) -> list[Path]:
    """Regenerate the committed modules in place; returns the paths written."""
    written = []
    for generated in generate(repo_root):
        target = repo_root / generated.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(generated.content)
        written.append(generated.path)
    return written


def stale_files(repo_root: Path) -> list[Path]:
    """Return the committed generated files that differ from a fresh generation."""
    stale = []
    for generated in generate(repo_root):
        target = repo_root / generated.path
        if not target.exists() or target.read_bytes() != generated.content:
            stale.append(generated.path)
    return stale
