"""Driving the device's update service in process: a host stand-in, answers, a whole push, hostile headers.

Free of pytest and of ``tests/`` imports, so that ``power_cut_child.py`` (run in a child process that
is killed part-way) drives the service with exactly the code the tests use.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import Bundle, BundleHeader, build_bundle
from seedcam.errors import BundleError
from seedcam.types import Health
from seedcam_firmware.config import UpdatesConfig
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest
from seedcam_firmware.transfer import UpdateService, transfer_tag
from seedcam_tools.bundles import build_model_bundle, model_bundle_files

__all__ = [
    "LANE",
    "Host",
    "Replies",
    "begin",
    "call",
    "files_of",
    "forged_header",
    "lane_bundle",
    "push",
    "relabelled",
    "service",
    "slot_versions",
]

MODELS = Path(__file__).resolve().parents[2] / "models"
LANE = MODELS / "lane"
WAIT_S = 30.0  # a self-test on a loaded 2-core box


class Host:
    """The daemon as the update service sees it: a task "loads" when its manifest loads and names the task.

    Args:
        refuse_load: every load fails (a model the task cannot use).
    """

    firmware_version = "0.1.0"

    def __init__(self, *, refuse_load: bool = False) -> None:
        self.refuse_load = refuse_load
        self.running: dict[str, ModelManifest] = {}
        self.loads: list[Path] = []
        self.restarts = 0

    def load_task(self, task: str, manifest: Path, precision: str) -> ModelManifest:
        self.loads.append(manifest)
        if self.refuse_load:
            raise BundleError(f"the {task} task cannot use {manifest.parent.name}")
        loaded = load_manifest(manifest, precision=precision)
        if loaded.task != task:
            raise BundleError(f"a {loaded.task} model for the {task} task")
        return loaded

    def swap_task(self, task: ModelManifest) -> None:
        self.running[task.task] = task

    def request_restart(self) -> None:
        self.restarts += 1

    def health(self) -> Health:
        raise AssertionError("not expected")


class Replies:
    """A ``reply`` callable that keeps the answers and lets a caller wait for one."""

    def __init__(self) -> None:
        self.responses: list[pb.UpdateResponse] = []
        self.event = threading.Event()

    def __call__(self, data: bytes) -> None:
        self.responses.append(pb.UpdateResponse.FromString(data))
        self.event.set()

    def wait(self, timeout: float = WAIT_S) -> pb.UpdateResponse:
        if not self.event.wait(timeout):
            raise AssertionError("the update service did not answer")
        return self.responses[-1]


def service(folder: Path, host: Host | None = None, **updates: Any) -> UpdateService:
    """An update service storing under ``folder`` (what a reboot of the device builds again)."""
    return UpdateService(UpdatesConfig(dir=str(folder), **updates), host or Host(), max_frame_size=65536)


def call(updates: UpdateService, request: pb.UpdateRequest) -> pb.UpdateResponse:
    replies = Replies()
    updates.handle(request.SerializeToString(), replies)
    return replies.wait()


def begin(header: Bundle | BundleHeader | bytes, signature: bytes = b"") -> pb.UpdateRequest:
    raw = (
        header.header.raw if isinstance(header, Bundle) else header.raw if isinstance(header, BundleHeader) else header
    )
    return pb.UpdateRequest(begin=pb.TransferBegin(header=raw, signature=signature))


def push(
    updates: UpdateService,
    bundle: Bundle,
    *,
    activate: bool = True,
    chunk: int = 32768,
    on_answer: Callable[[pb.UpdateResponse], None] | None = None,
) -> pb.UpdateResponse:
    """begin, chunks and end as a host sends them; returns the first refusal, an early answer or the end's answer."""
    answer = call(updates, begin(bundle))
    if answer.status != pb.STATUS_OK or not answer.HasField("state"):
        return answer
    tag, offset, size = answer.state.transfer_tag, answer.state.next_offset, bundle.header.size
    while offset < size:
        answer = call(
            updates,
            pb.UpdateRequest(
                chunk=pb.TransferChunk(transfer_tag=tag, offset=offset, data=bundle.payload[offset : offset + chunk])
            ),
        )
        if on_answer is not None:
            on_answer(answer)
        if answer.status != pb.STATUS_OK:
            return answer
        offset = answer.state.next_offset
    end = pb.TransferEnd(
        transfer_tag=transfer_tag(bundle.header.sha256), sha256=bundle.header.sha256, activate=activate
    )
    return call(updates, pb.UpdateRequest(end=end))


def lane_bundle(
    version: str,
    *,
    counter: int = 1,
    precision: str = "int8",
    manifest: Callable[[dict[str, Any]], None] | None = None,
    replace: dict[str, bytes] | None = None,
) -> Bundle:
    """The shipped lane model as a bundle of ``version``; ``manifest`` edits its manifest, ``replace`` files by role."""
    files = [(name, role, (replace or {}).get(role, data)) for name, role, data in model_bundle_files(LANE, precision)]
    if manifest is not None:
        edited = json.loads(files[0][2])
        manifest(edited)
        files[0] = (files[0][0], files[0][1], json.dumps(edited).encode())
    return build_model_bundle(LANE, precision=precision, version=version, security_counter=counter, files=files)


def forged_header(bundle: Bundle, **changes: Any) -> bytes:
    """``bundle``'s header bytes with fields changed, past the checks that building one makes."""
    fields = dict(bundle.header.fields)
    fields.update(changes)
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def slot_versions(updates: UpdateService, group: str = "lane") -> dict[str, Any]:
    """The pointer and what each slot holds intact (``None``: empty or damaged), as a comparable dict."""
    state = updates.store.state(group)
    held: dict[str, str | None] = {}
    for slot in ("a", "b"):
        try:
            held[slot] = updates.store.verify(group, slot).version
        except BundleError:
            held[slot] = None
    return {"active": state.active, "previous": state.previous, **held}


def files_of(bundle: Bundle) -> Iterable[tuple[str, str, bytes]]:
    """``bundle``'s payload files as ``(name, role, bytes)``."""
    return [(f.name, f.role, bundle.file_bytes(f)) for f in bundle.header.files]


def relabelled(bundle: Bundle, **identity: str) -> Bundle:
    """``bundle``'s files under a header that claims another name, version or task."""
    h = bundle.header
    extra = {k: h.fields[k] for k in ("task", "precision", "input_shape", "selftest")}
    extra["task"] = identity.get("task", h.task)
    return build_bundle(
        list(files_of(bundle)),
        kind="model",
        name=identity.get("name", h.name),
        version=identity.get("version", h.version),
        security_counter=h.security_counter,
        extra=extra,
    )
