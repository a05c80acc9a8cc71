"""Update storage: the journal's resume point comes from the block hashes; slot pointers flip atomically."""

from __future__ import annotations

from pathlib import Path

import pytest

from seedcam.bundle import build_bundle
from seedcam.errors import BundleError
from seedcam_firmware.storage import GroupState, SlotStore, TransferJournal

PAYLOAD = bytes(range(256)) * 200  # 51 200 bytes: 3 full 16 KiB blocks and a short one


def header(version: str = "1.0.0", counter: int = 0):  # type: ignore[no-untyped-def]
    return build_bundle(
        [("blob.bin", "model", PAYLOAD)],
        kind="model",
        name="x",
        version=version,
        security_counter=counter,
        extra={"task": "lane"},
    ).header


def test_a_torn_part_file_resumes_at_the_last_intact_block(tmp_path: Path) -> None:
    journal = TransferJournal(tmp_path)
    assert journal.start(header(), b"") is False
    assert journal.write(0, PAYLOAD[:40000]) and journal.next_offset == 40000
    with journal.part_path.open("r+b") as fh:  # a power cut tore block 1
        fh.seek(20000)
        fh.write(b"\xff" * 10)
    again = TransferJournal(tmp_path)  # the firmware restarts
    assert again.start(header(), b"") is True
    assert again.next_offset == 16384 and again.part_path.stat().st_size == 16384
    assert again.write(16384, PAYLOAD[16384:]) and again.complete


def test_chunks_out_of_place_change_nothing_and_a_bad_block_is_cut_off(tmp_path: Path) -> None:
    journal = TransferJournal(tmp_path)
    journal.start(header(), b"")
    assert journal.write(30000, PAYLOAD[30000:31000]) and journal.next_offset == 0  # after a gap: ignored
    bad = bytearray(PAYLOAD[:20000])
    bad[100] ^= 1
    assert journal.write(0, bytes(bad)) is False and journal.next_offset == 0
    assert journal.write(0, PAYLOAD[:20000]) and journal.write(0, PAYLOAD[:20000])  # a duplicate
    assert journal.next_offset == 20000
    assert TransferJournal(tmp_path).start(header("2.0.0"), b"") is False  # another bundle starts over


def _install(store: SlotStore, version: str, counter: int) -> str:
    h = header(version, counter)
    slot = store.inactive_slot("lane")
    staged = store.stage("lane")
    (staged / "blob.bin").write_bytes(PAYLOAD)
    store.commit("lane", slot, staged, h.raw, b"")
    store.activate("lane", slot)
    return slot


def test_slots_alternate_keep_the_previous_one_and_roll_back(tmp_path: Path) -> None:
    store = SlotStore(tmp_path)
    assert _install(store, "1.0.0", 3) == "a"
    assert _install(store, "2.0.0", 3) == "b"
    state = store.state("lane")
    assert (state.active, state.previous, state.counter) == ("b", "a", 3)
    assert store.rollback("lane").active == "a"
    staged = store.stage("lane")  # staging a new bundle changes nothing...
    assert store.state("lane").previous == "b"
    (staged / "blob.bin").write_bytes(PAYLOAD)
    store.commit("lane", "b", staged, header("3.0.0", 3).raw, b"")  # ...replacing the rollback target ends it
    assert store.state("lane").previous is None
    with pytest.raises(BundleError):
        store.rollback("lane")
    with pytest.raises(ValueError):
        store.delete("lane", "a")  # active


def test_a_crash_before_the_pointer_rename_leaves_the_old_slot_active(tmp_path: Path) -> None:
    class Cut(Exception):
        pass

    def power_cut() -> None:
        raise Cut

    store = SlotStore(tmp_path)
    _install(store, "1.0.0", 1)
    store = SlotStore(tmp_path, at_step=lambda step: power_cut() if step == "during_activate" else None)
    with pytest.raises(Cut):
        _install(store, "2.0.0", 2)
    after = SlotStore(tmp_path)
    assert after.state("lane").active == "a" and after.verify("lane", "a").version == "1.0.0"
    assert not [p for p in (tmp_path / "lane").iterdir() if p.name.startswith(".tmp-")]


def test_rollback_and_activate_refuse_a_slot_below_the_security_counter(tmp_path: Path) -> None:
    store = SlotStore(tmp_path)
    _install(store, "1.0.0", 1)
    _install(store, "2.0.0", 3)  # a security fix: counter 3
    for attempt in (lambda: store.rollback("lane"), lambda: store.activate("lane", "a")):
        with pytest.raises(BundleError, match="counter"):
            attempt()
    state = store.state("lane")
    assert (state.active, state.previous, state.counter) == ("b", "a", 3)


def test_a_slot_on_trial_is_never_overwritten_or_deleted(tmp_path: Path) -> None:
    store = SlotStore(tmp_path)
    store.write_state("firmware", GroupState(active="a", trial="b", trial_started=True))
    for attempt in (
        lambda: store.inactive_slot("firmware"),
        lambda: store.commit("firmware", "b", store.stage("firmware"), b"", b""),
        lambda: store.delete("firmware", "b"),
    ):
        with pytest.raises(ValueError, match="trial"):
            attempt()
    assert store.state("firmware").trial == "b"
