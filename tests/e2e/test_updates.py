"""Model updates over the link, end to end: the real firmware process on a pty, driven through the SDK and CLI.

Covers the issue's "done when" list: kill -9 at each step of a push, a damaged
chunk, every refusal, and results streaming during a push.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from corrupting_proxy import CorruptingProxy
from helpers import MODELS, wait_until

import seedcam
from seedcam import updates
from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import read_bundle, write_bundle
from seedcam.cli import main as seedcam_main
from seedcam.errors import BundleError, UpdateRefused
from seedcam.transport import open_transport
from seedcam_firmware.transfer import CRASH_ENV, transfer_tag
from seedcam_tools.bundles import build_model_bundle, generate_keypair, model_bundle_files, sign_bundle

pytestmark = pytest.mark.e2e

LANE = MODELS / "lane"
SHIPPED_SHA = hashlib.sha256((LANE / "lane_int8.tflite").read_bytes()).hexdigest()
SHIPPED_VERSION = json.loads((LANE / "manifest.json").read_text())["version"]


def lane_model(sensor: seedcam.Sensor) -> seedcam.ModelInfo:
    (model,) = [m for m in sensor.models() if m.task == "lane"]
    return model


def bundle_file(
    tmp_path: Path,
    name: str,
    *,
    version: str,
    counter: int = 0,
    key: bytes | None = None,
    precision: str = "int8",
    files=None,
) -> Path:  # noqa: ANN001
    bundle = build_model_bundle(LANE, precision=precision, version=version, security_counter=counter, files=files)
    if key is not None:
        bundle = sign_bundle(bundle, key)
    return write_bundle(bundle, tmp_path / name)


def start(firmware_factory, tmp_path: Path, *extra: str):  # noqa: ANN001, ANN201
    # lane only: these tests replace the lane model and watch its results
    return firmware_factory("--fps", "15", "--tasks", "lane", "--set", f"updates.dir={tmp_path / 'storage'}", *extra)


def test_push_rollback_delete_through_the_cli_while_results_stream(firmware_factory, tmp_path: Path) -> None:
    fw = start(firmware_factory, tmp_path)
    first = bundle_file(tmp_path, "lane-1.1.scb", version="1.1.0", counter=2)  # same counter: may be rolled back to
    second = bundle_file(tmp_path, "lane-1.2.scb", version="1.2.0", counter=2, precision="float32")
    out = io.StringIO()
    assert seedcam_main(["--port", fw.link, "models", "push", str(first), "-q"], out) == 0
    assert "lane-v3@1.1.0 in lane slot a: self-test passed" in out.getvalue()
    with seedcam.open(fw.link, timeout=10) as sensor:
        assert lane_model(sensor).version == "1.1.0"
        during: list[seedcam.Result] = []
        stop_counting = sensor.on_result(during.append)
        done = updates.push_bundle(sensor, second, chunk_size=4096, window=8192)  # slowly: several result periods
        stop_counting()
        assert done.install.previous_slot == "a" and done.data_seconds > 0
        assert len(during) >= 1  # results kept streaming during the push
        model = lane_model(sensor)
        assert (model.version, model.precision, model.active) == ("1.2.0", "float32", True)
        wait_until(lambda: sensor.recv(timeout=5).model_ids == ("lane-v3-float32",), 10, "results of the new model")

    out = io.StringIO()
    assert seedcam_main(["--port", fw.link, "models", "slots", "--json"], out) == 0
    (lane,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lane["security_counter"] == 2
    assert [(s["slot"], s["version"], s["active"], s["previous"]) for s in lane["slots"]] == [
        ("a", "1.1.0", False, True),
        ("b", "1.2.0", True, False),
    ]
    assert seedcam_main(["--port", fw.link, "models", "rollback", "lane"], out) == 0
    assert seedcam_main(["--port", fw.link, "models", "delete", "lane", "a"], io.StringIO()) == 2  # active now
    assert seedcam_main(["--port", fw.link, "models", "delete", "lane", "b"], io.StringIO()) == 0
    with seedcam.open(fw.link, timeout=10) as sensor:
        assert lane_model(sensor).version == "1.1.0"
        with pytest.raises(UpdateRefused) as refused:
            updates.rollback(sensor, "lane")
        assert refused.value.reason == "no_previous"
    fw.terminate()
    fw = start(firmware_factory, tmp_path)  # the installed model survives a restart of the firmware
    with seedcam.open(fw.link, timeout=10) as sensor:
        assert lane_model(sensor).version == "1.1.0"


@pytest.mark.parametrize(
    "step",
    [
        "after_begin",
        "mid_chunks",
        "after_last_chunk",
        "during_staging",
        "during_selftest",
        "after_selftest",
        "during_commit",
        "during_activate",
    ],
)
def test_kill_9_at_each_step_keeps_the_old_model_and_the_next_push_resumes(
    firmware_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    path = bundle_file(tmp_path, "lane.scb", version="2.0.0", counter=1)
    monkeypatch.setenv(CRASH_ENV, step)
    fw = start(firmware_factory, tmp_path)
    with seedcam.open(fw.link, timeout=10, reconnect=False) as sensor:
        with pytest.raises((seedcam.LinkBroken, seedcam.SensorTimeout)):
            updates.push_bundle(sensor, path, timeout=3, resume_timeout=0)
    fw.proc.wait(10)
    assert fw.proc.returncode == -9, f"the firmware did not die at {step}"

    monkeypatch.delenv(CRASH_ENV)
    fw = start(firmware_factory, tmp_path)
    with seedcam.open(fw.link, timeout=10) as sensor:
        old = lane_model(sensor)
        assert (old.version, old.sha256, old.active) == (SHIPPED_VERSION, SHIPPED_SHA, True)  # the old model is active
        assert sensor.recv(timeout=10).model_ids == ("lane-v3-int8",)  # ... and loadable: it produces results
        done = updates.push_bundle(sensor, path)
        assert done.activated and lane_model(sensor).version == "2.0.0"
    size = done.payload_size
    if step == "after_begin":
        assert done.resumed_from == 0
    elif step == "mid_chunks":
        assert size // 2 - 65536 <= done.resumed_from < size  # intact blocks kept, at most the torn tail lost
    else:
        assert done.resumed_from == size  # the whole payload was kept: only the end is repeated
        assert done.bytes_sent == 0


def test_damaged_chunks_are_rejected_and_resent(firmware_factory, tmp_path: Path) -> None:
    fw = start(firmware_factory, tmp_path)
    path = bundle_file(tmp_path, "lane.scb", version="3.0.0", counter=1)
    device_side = open_transport(fw.link)
    proxy_end = open_transport("pair://update-proxy")
    proxy = CorruptingProxy(
        device_side, proxy_end, to_host=lambda i: None, to_device=lambda i: "flip" if i % 4 == 1 else None
    )
    try:
        with seedcam.open("pair://update-proxy", timeout=5, reconnect=False) as sensor:
            wait_until(lambda: sensor.health is not None, 10, "a health report")
            crc_before = sensor.health.link.crc_errors
            proxy.to_device.enabled.set()
            done = updates.push_bundle(sensor, path, chunk_size=8192, timeout=1.0)
            proxy.to_device.enabled.clear()
            assert proxy.to_device.damaged >= 3
            assert done.bytes_sent > done.payload_size  # the damaged chunks were sent again
            assert done.activated
            # the device counted the damaged frames as CRC errors (a health report after the push says so)
            wait_until(lambda: sensor.health.link.crc_errors > crc_before, 10, "the device's CRC error count")
            (lane,) = updates.list_slots(sensor)
            assert lane.active is not None
            # what the device stored, read back from its disk, is exactly the bundle's files
            bundle = read_bundle(path)
            slot_dir = tmp_path / "storage" / "slots" / "lane" / lane.active.slot
            for entry in bundle.header.files:
                stored = hashlib.sha256((slot_dir / entry.name).read_bytes()).hexdigest()
                assert stored == hashlib.sha256(bundle.file_bytes(entry)).hexdigest() == entry.sha256, entry.name
    finally:
        proxy.close()
        device_side.close()
        proxy_end.close()


def test_a_chunk_with_wrong_bytes_fails_its_block_hash_and_is_resent(firmware_factory, tmp_path: Path) -> None:
    """Data damaged before framing (so the link CRC is fine) is caught by the block hash."""
    fw = start(firmware_factory, tmp_path)
    path = bundle_file(tmp_path, "lane.scb", version="3.1.0", counter=1)
    from seedcam.bundle import read_bundle

    bundle = read_bundle(path)
    with seedcam.open(fw.link, timeout=10) as sensor:
        channel = updates._Channel(sensor)
        try:
            state = channel.call(pb.UpdateRequest(begin=pb.TransferBegin(header=bundle.header.raw)), 5).state
            tag = transfer_tag(bundle.header.sha256)
            good = bundle.payload[:40000]  # blocks 0 and 1 complete, block 2 begun
            bad = bytearray(good)
            bad[18000] ^= 0x01
            channel.send_chunk(tag, 0, bytes(bad), 5)
            _, ack = channel.acks.get(timeout=5)
            assert ack.reason == "block_hash"
            assert ack.state.next_offset == 16384  # block 0 was fine, block 1 was cut off again
            assert state.next_offset == 0
        finally:
            channel.close()
        done = updates.push_bundle(sensor, path)  # resumes from the verified block and finishes
        assert done.resumed_from == 16384 and done.activated


def test_every_bad_bundle_is_refused_with_its_reason_and_never_activated(firmware_factory, tmp_path: Path) -> None:
    trusted, stranger = generate_keypair(), generate_keypair()
    fw = start(firmware_factory, tmp_path, "--set", f"updates.public_keys={trusted.public.hex()}")

    def variant(name: str, **changes: bytes) -> list[tuple[str, str, bytes]]:
        files = model_bundle_files(LANE, "float32" if name == "nan" else "int8")
        return [(f, role, changes.get(role, data)) for f, role, data in files]

    manifest = json.loads(variant("x")[0][2])
    manifest["input"]["shape"] = [1, 64, 64, 3]
    nan_input = io.BytesIO()
    np.save(nan_input, np.full((1, 64, 128, 3), np.nan, dtype=np.float32))
    cases = {
        "unsigned": bundle_file(tmp_path, "unsigned.scb", version="4.0.0", counter=3),
        "unknown_key": bundle_file(tmp_path, "stranger.scb", version="4.0.0", counter=3, key=stranger.private),
        "not_tflite": bundle_file(
            tmp_path,
            "junk.scb",
            version="4.0.0",
            counter=3,
            key=trusted.private,
            files=variant("x", model=b"\x00" * 4096),
        ),
        "input_shape": bundle_file(
            tmp_path,
            "shape.scb",
            version="4.0.0",
            counter=3,
            key=trusted.private,
            files=variant("x", manifest=json.dumps(manifest).encode()),
        ),
        "selftest_nan": bundle_file(
            tmp_path,
            "nan.scb",
            version="4.0.0",
            counter=3,
            key=trusted.private,
            precision="float32",
            files=variant("nan", golden_input=nan_input.getvalue()),
        ),
    }
    good = bundle_file(tmp_path, "good.scb", version="4.1.0", counter=3, key=trusted.private)
    older = bundle_file(tmp_path, "older.scb", version="4.2.0", counter=2, key=trusted.private)
    signed = (tmp_path / "good.scb").read_bytes()
    forged = tmp_path / "forged.scb"  # header changed after signing: counter raised by an attacker
    forged.write_bytes(signed.replace(b'"security_counter":3', b'"security_counter":9'))
    payload_tampered = tmp_path / "payload.scb"  # header and signature intact, one payload byte changed
    data = bytearray(signed)
    data[-50_000] ^= 0x40
    payload_tampered.write_bytes(bytes(data))

    with seedcam.open(fw.link, timeout=10) as sensor:
        for reason, path in cases.items():
            with pytest.raises(UpdateRefused) as refused:
                updates.push_bundle(sensor, path)
            assert refused.value.reason == reason, refused.value
            assert lane_model(sensor).version == SHIPPED_VERSION
        with pytest.raises(UpdateRefused) as refused:
            updates.push_bundle(sensor, forged)
        assert refused.value.reason == "bad_signature"
        with pytest.raises(UpdateRefused) as refused:
            updates.push_bundle(sensor, payload_tampered, check_file=False)
        assert refused.value.reason == "tampered"
        with pytest.raises(BundleError, match="tampered"):  # the SDK refuses it before sending anything
            updates.push_bundle(sensor, payload_tampered)
        truncated = tmp_path / "truncated.scb"
        truncated.write_bytes(signed[:-5000])
        with pytest.raises(BundleError, match="truncated"):
            updates.push_bundle(sensor, truncated)
        assert seedcam_main(["--port", fw.link, "models", "push", str(truncated), "-q"], io.StringIO()) == 1
        # the device refuses to end a transfer it has not got all of
        channel = updates._Channel(sensor)
        try:
            from seedcam.bundle import read_bundle

            header = read_bundle(good).header
            channel.call(
                pb.UpdateRequest(
                    begin=pb.TransferBegin(header=header.raw, signature=read_bundle(good).signature.to_bytes())
                ),
                5,
            )
            with pytest.raises(UpdateRefused) as refused:
                channel.call(pb.UpdateRequest(end=pb.TransferEnd(transfer_tag=transfer_tag(header.sha256))), 5)
            assert refused.value.reason == "truncated"
        finally:
            channel.close()
        assert lane_model(sensor).version == SHIPPED_VERSION
        assert updates.list_slots(sensor) == () or all(g.active is None for g in updates.list_slots(sensor))

        assert updates.push_bundle(sensor, good).activated
        with pytest.raises(UpdateRefused) as refused:
            updates.push_bundle(sensor, older)
        assert refused.value.reason == "counter"
        assert lane_model(sensor).version == "4.1.0"
    assert fw.proc.poll() is None


def test_updates_disabled_without_a_storage_dir(firmware_factory, tmp_path: Path) -> None:
    fw = firmware_factory("--fps", "15")
    with seedcam.open(fw.link, timeout=10) as sensor:
        with pytest.raises(UpdateRefused) as refused:
            updates.list_slots(sensor)
        assert refused.value.reason == "disabled"


def test_push_resumes_by_itself_across_a_firmware_restart(firmware_factory, tmp_path: Path) -> None:
    fw = start(firmware_factory, tmp_path, "--throttle", "115200")
    path = bundle_file(tmp_path, "lane.scb", version="5.0.0", counter=1)
    outcome: dict[str, object] = {}
    seen: list[updates.PushProgress] = []
    with seedcam.open(fw.link, timeout=10) as sensor:

        def push() -> None:
            try:
                outcome["result"] = updates.push_bundle(sensor, path, progress=seen.append, timeout=3)
            except Exception as exc:  # noqa: BLE001 - reported below
                outcome["error"] = exc

        pusher = threading.Thread(target=push)
        pusher.start()
        wait_until(lambda: seen and seen[-1].acked >= 60_000, 30, "part of the payload on the device")
        fw.kill()
        start(firmware_factory, tmp_path)  # unthrottled now: the rest goes fast
        pusher.join(60)
        rebooted = sensor.stats.device_reboots
    assert "error" not in outcome, outcome
    result = outcome["result"]
    assert result.activated and rebooted == 1
    # resumed from the journal, not started over: what was acknowledged before the kill was not sent again
    # (at most the torn block and the chunks in flight were)
    assert result.bytes_sent < result.payload_size + 60_000


def test_an_install_whose_answer_died_with_the_firmware_is_found_not_sent_again(
    firmware_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The device installed the bundle and went down before answering the end (as a firmware update does)."""
    path = bundle_file(tmp_path, "lane.scb", version="6.0.0", counter=1)
    monkeypatch.setenv(CRASH_ENV, "before_end_reply")
    fw = start(firmware_factory, tmp_path)
    monkeypatch.delenv(CRASH_ENV)
    outcome: dict[str, object] = {}
    with seedcam.open(fw.link, timeout=10) as sensor:

        def push() -> None:
            try:
                outcome["result"] = updates.push_bundle(sensor, path, timeout=3)
            except Exception as exc:  # noqa: BLE001 - reported below
                outcome["error"] = exc

        pusher = threading.Thread(target=push)
        pusher.start()
        fw.proc.wait(60)
        assert fw.proc.returncode == -9, "the firmware did not die before answering the end"
        start(firmware_factory, tmp_path)
        pusher.join(90)
        assert "error" not in outcome, outcome
        result = outcome["result"]
        assert result.install.slot == "a" and result.activated  # the slot it was installed in: not a second copy
        assert result.bytes_sent == result.payload_size  # nothing sent twice
        assert lane_model(sensor).version == "6.0.0"
