"""The device's update service and boot loader in process: refusals before data, worker threads, slot checks."""

from __future__ import annotations

import shutil
import threading
import zipfile
from pathlib import Path
from typing import NoReturn

import pytest
import update_helpers as helpers
from helpers import REPO
from update_helpers import Replies, begin, call

from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import Bundle, build_bundle
from seedcam_firmware.errors import UpdateRefusal
from seedcam_firmware.storage import GroupState, SlotStore, TransferJournal
from seedcam_firmware.supervisor import check_firmware_slot, next_boot
from seedcam_firmware.transfer import FIRMWARE, SUPERVISED_ENV, UpdateService
from seedcam_firmware.wheel import unpack_wheel
from seedcam_tools.bundles import build_firmware_bundle, wheel_from_source

WAIT_S = 10.0


class Host(helpers.Host):
    """A host this service must not ask for anything."""

    def load_task(self, task: str, manifest: Path, precision: str) -> NoReturn:
        raise AssertionError("not expected")

    def swap_task(self, task: object) -> NoReturn:
        raise AssertionError("not expected")

    def request_restart(self) -> NoReturn:
        raise AssertionError("not expected")


@pytest.fixture(scope="module")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Bundle]:
    folder = tmp_path_factory.mktemp("wheel")
    wheel = wheel_from_source(REPO / "firmware" / "seedcam_firmware", folder, "0.2.0")
    return wheel, build_firmware_bundle(wheel)


def service(tmp_path: Path) -> UpdateService:
    return helpers.service(tmp_path / "updates", Host())


def test_a_firmware_bundle_is_refused_at_begin_without_the_supervisor(
    tmp_path: Path, firmware: tuple[Path, Bundle], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SUPERVISED_ENV, raising=False)
    updates = service(tmp_path)
    refused = call(updates, begin(firmware[1]))
    assert refused.reason == "unsupervised" and refused.status == pb.STATUS_FAILED_PRECONDITION
    assert updates.journal.header is None and updates.store.state(FIRMWARE).trial is None
    assert call(updates, pb.UpdateRequest(activate=pb.SlotRequest(name=FIRMWARE, slot="a"))).reason == "empty_slot"

    monkeypatch.setenv(SUPERVISED_ENV, "1")
    updates.store.write_state(FIRMWARE, GroupState(active="a", trial="b"))
    refused = call(updates, begin(firmware[1]))  # another firmware is on trial: its slot is not free
    assert refused.reason == "trial" and refused.status == pb.STATUS_BUSY
    assert call(updates, pb.UpdateRequest(delete=pb.SlotRequest(name=FIRMWARE, slot="b"))).reason == "trial"
    updates.store.write_state(FIRMWARE, GroupState())
    assert call(updates, begin(firmware[1])).state.size == firmware[1].header.size


def _wheel(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "x.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize("name", ["../escape.py", "/abs/escape.py", "a/../../escape.py"])
def test_a_wheel_member_with_an_absolute_path_or_dotdot_is_refused(tmp_path: Path, name: str) -> None:
    slot = tmp_path / "slot"
    slot.mkdir()
    with pytest.raises(UpdateRefusal) as refused:
        unpack_wheel(_wheel(tmp_path, {"ok.py": b"", name: b"x"}), slot, max_bytes=10**9)
    assert refused.value.reason == "firmware" and not list(slot.iterdir())


def test_a_wheel_that_unpacks_beyond_the_free_space_is_refused_before_writing(tmp_path: Path) -> None:
    slot = tmp_path / "slot"
    slot.mkdir()
    bomb = _wheel(tmp_path, {"big.bin": bytes(5_000_000)})  # compresses to a few kB
    assert bomb.stat().st_size < 50_000
    with pytest.raises(UpdateRefusal) as refused:
        unpack_wheel(bomb, slot, max_bytes=1_000_000)
    assert refused.value.reason == "no_space" and not list(slot.iterdir())
    unpack_wheel(bomb, slot, max_bytes=6_000_000)
    assert (slot / "big.bin").stat().st_size == 5_000_000


def test_begin_runs_off_the_reader_thread_and_the_link_keeps_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = build_bundle(
        [("blob.bin", "model", bytes(100_000))], kind="model", name="x", version="1.0.0", extra={"task": "lane"}
    )
    updates = service(tmp_path)
    assert call(updates, begin(bundle)).state.next_offset == 0
    release, hashing = threading.Event(), threading.Event()
    original = TransferJournal._verified_length

    def slow(journal: TransferJournal) -> int:  # a resume point from a large part file
        hashing.set()
        assert release.wait(WAIT_S)
        return original(journal)

    monkeypatch.setattr(TransferJournal, "_verified_length", slow)
    replies = Replies()
    updates.handle(begin(bundle).SerializeToString(), replies)  # the reader thread is back at once
    assert hashing.wait(WAIT_S) and not replies.responses
    assert call(updates, pb.UpdateRequest(list_slots=pb.ListSlotsRequest())).status == pb.STATUS_OK
    assert call(updates, pb.UpdateRequest(abort=pb.TransferAbort())).reason == "busy"
    again = Replies()
    updates.handle(begin(bundle).SerializeToString(), again)  # the host resends a begin slow to answer: it joins
    release.set()
    assert replies.wait().state.resumed and again.wait().state.resumed


def test_a_re_signed_resume_is_written_to_the_journal(tmp_path: Path) -> None:
    bundle = build_bundle(
        [("blob.bin", "model", bytes(50_000))], kind="model", name="x", version="1.0.0", extra={"task": "lane"}
    )
    journal = TransferJournal(tmp_path)
    journal.start(bundle.header, b"first signature")
    assert journal.write(0, bytes(20_000))
    assert journal.start(bundle.header, b"second signature") is True
    assert TransferJournal(tmp_path).signature == b"second signature"  # after a power cut


def _install_firmware(store: SlotStore, slot: str, wheel: Path, bundle: Bundle) -> Path:
    staged = store.stage(FIRMWARE)
    shutil.copyfile(wheel, staged / wheel.name)
    unpack_wheel(staged / wheel.name, staged, max_bytes=10**9)
    return store.commit(FIRMWARE, slot, staged, bundle.header.raw, b"")


def test_a_firmware_slot_with_a_missing_or_changed_tree_never_boots(
    tmp_path: Path, firmware: tuple[Path, Bundle]
) -> None:
    store = SlotStore(tmp_path)
    a = _install_firmware(store, "a", *firmware)
    b = _install_firmware(store, "b", *firmware)
    store.write_state(FIRMWARE, GroupState(active="a", previous="b"))
    assert check_firmware_slot(store, "a") is None
    assert next_boot(store) == ("a", False)

    shutil.rmtree(a / "seedcam_firmware")  # Python would quietly import the installed package instead
    assert "missing" in (check_firmware_slot(store, "a") or "")
    assert next_boot(store) == ("b", False)  # the previous slot

    (b / "seedcam_firmware" / "cli.py").write_text("raise SystemExit('tampered')\n")
    assert "RECORD" in (check_firmware_slot(store, "b") or "")
    assert next_boot(store) == (None, False)  # the installed package

    store.write_state(FIRMWARE, GroupState(active="b"))
    c = _install_firmware(store, "a", *firmware)  # a fresh install in a, booted on trial...
    store.write_state(FIRMWARE, GroupState(active="b", trial="a"))
    (c / "seedcam_firmware" / "__init__.py").unlink()  # ...whose tree was damaged before it booted
    assert next_boot(store) == (None, False)
    state = store.state(FIRMWARE)
    assert state.trial is None and not state.trial_started  # reverted, never booted


def test_a_trial_boot_that_never_confirmed_is_reverted_at_the_next_boot(
    tmp_path: Path, firmware: tuple[Path, Bundle]
) -> None:
    store = SlotStore(tmp_path)
    _install_firmware(store, "a", *firmware)
    _install_firmware(store, "b", *firmware)
    store.write_state(FIRMWARE, GroupState(active="a", trial="b"))
    assert next_boot(store) == ("b", True)
    assert store.state(FIRMWARE).trial_started  # recorded before the trial boots
    assert next_boot(store) == ("a", False)  # a power cut during the trial: the old firmware
    assert store.state(FIRMWARE).trial is None


def test_rollback_and_activate_to_a_slot_below_the_security_counter_are_refused(tmp_path: Path) -> None:
    updates = service(tmp_path)
    for slot, counter in (("a", 1), ("b", 3)):  # b fixed a security hole: counter 3
        bundle = build_bundle(
            [("blob.bin", "model", bytes(1000))],
            kind="model",
            name="x",
            version=f"{counter}.0.0",
            security_counter=counter,
            extra={"task": "lane"},
        )
        staged = updates.store.stage("lane")
        (staged / "blob.bin").write_bytes(bytes(1000))
        updates.store.commit("lane", slot, staged, bundle.header.raw, b"")
    updates.store.write_state("lane", GroupState(active="b", previous="a", counter=3))
    for request in (
        pb.UpdateRequest(rollback=pb.SlotRequest(name="lane")),
        pb.UpdateRequest(activate=pb.SlotRequest(name="lane", slot="a")),
    ):
        refused = call(updates, request)
        assert refused.reason == "counter" and refused.status == pb.STATUS_FAILED_PRECONDITION
    assert updates.store.state("lane") == GroupState(active="b", previous="a", counter=3)
