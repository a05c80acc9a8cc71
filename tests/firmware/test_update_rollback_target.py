"""Updates never cost the rollback target: refused bundles, re-pushes and power cuts at every storage step.

Every test starts from a device with two models installed: 1.0.0 in slot a (the rollback target)
and 2.0.0 in slot b (active).
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from update_helpers import Host, begin, call, lane_bundle, push, relabelled, service, slot_versions

from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import Bundle, write_bundle
from seedcam_firmware.transfer import CRASH_ENV, UpdateService

CHILD = Path(__file__).with_name("power_cut_child.py")
BEFORE = {"active": "b", "previous": "a", "a": "1.0.0", "b": "2.0.0"}
PUSHED = {"active": "a", "previous": "b", "a": "3.0.0", "b": "2.0.0"}  # 2.0.0 is the rollback target now
PUSH_STEPS = {  # where a power cut stops a push of 3.0.0, and what the next boot finds
    "after_begin": BEFORE,
    "mid_chunks": BEFORE,
    "after_last_chunk": BEFORE,
    "during_staging": BEFORE,
    "during_selftest": BEFORE,
    "after_selftest": BEFORE,
    "during_commit": {"active": "b", "previous": None, "a": None, "b": "2.0.0"},  # slot a half replaced
    "during_activate": {"active": "b", "previous": None, "a": "3.0.0", "b": "2.0.0"},  # installed, not active
    "before_end_reply": PUSHED,
}
FAILED_STEPS = ["after_begin", "mid_chunks", "after_last_chunk", "during_staging", "during_selftest", "after_refusal"]


def nan_bundle() -> Bundle:
    """A bundle whose model turns its golden input into NaN: it fails its self-test."""
    nan_input = io.BytesIO()
    np.save(nan_input, np.full((1, 64, 128, 3), np.nan, dtype=np.float32))
    return lane_bundle("4.0.0", precision="float32", replace={"golden_input": nan_input.getvalue()})


@pytest.fixture(scope="module")
def bundles() -> dict[str, Bundle]:
    return {"1": lane_bundle("1.0.0"), "2": lane_bundle("2.0.0"), "3": lane_bundle("3.0.0"), "nan": nan_bundle()}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, bundles: dict[str, Bundle]) -> Path:
    folder = tmp_path_factory.mktemp("device") / "updates"
    updates = service(folder)
    assert push(updates, bundles["1"]).installed.slot == "a"
    assert push(updates, bundles["2"]).installed.slot == "b"
    assert slot_versions(updates) == BEFORE
    updates.close()
    return folder


@pytest.fixture
def device(installed: Path, tmp_path: Path) -> Path:
    """A copy of the device's storage with 1.0.0 (rollback target) and 2.0.0 (active)."""
    folder = tmp_path / "updates"
    shutil.copytree(installed, folder, symlinks=True)
    return folder


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "slots" / "lane").iterdir() if p.name.startswith("."))


# ---------------------------------------------------------------- finding 7: a re-push


def test_pushing_an_installed_bundle_again_answers_already_installed_and_changes_nothing(
    device: Path, bundles: dict[str, Bundle]
) -> None:
    updates = service(device)
    pointer = (device / "slots" / "lane" / "state.json").read_bytes()
    for bundle, slot, active in ((bundles["2"], "b", True), (bundles["1"], "a", False)):
        answer = call(updates, begin(bundle))
        assert (answer.status, answer.reason) == (pb.STATUS_OK, "already_installed"), answer
        report = answer.installed
        assert (report.name, report.slot, report.bundle_id, report.activated) == (
            "lane",
            slot,
            bundle.header.id,
            active,
        )
        assert updates.journal.header is None  # no transfer opened: nothing to send
    assert slot_versions(updates) == BEFORE
    assert (device / "slots" / "lane" / "state.json").read_bytes() == pointer


def test_a_host_that_lost_the_answer_to_its_end_and_begins_again_keeps_the_rollback_target(
    device: Path, bundles: dict[str, Bundle]
) -> None:
    updates = service(device)
    assert push(updates, bundles["3"]).installed.slot == "a"
    again = push(updates, bundles["3"])  # its answer lost, the host pushes the same bundle again
    assert again.reason == "already_installed" and (again.installed.slot, again.installed.activated) == ("a", True)
    assert slot_versions(updates) == PUSHED


def test_a_re_push_of_the_installed_bundle_reaches_no_storage_step(
    device: Path, bundles: dict[str, Bundle], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A power cut during a re-push cannot cost anything: it writes nothing at all."""
    cuts: list[str] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: cuts.append(os.environ[CRASH_ENV]))
    updates = service(device)
    for step in (*PUSH_STEPS, *FAILED_STEPS):
        monkeypatch.setenv(CRASH_ENV, step)
        assert push(updates, bundles["2"]).reason == "already_installed"
    assert cuts == [] and slot_versions(updates) == BEFORE


# ---------------------------------------------------------------- finding 8: a refused bundle


@pytest.mark.parametrize("bad", ["selftest_nan", "identity", "model"])
def test_a_refused_bundle_never_costs_the_rollback_target(device: Path, bundles: dict[str, Bundle], bad: str) -> None:
    host = Host(refuse_load=bad == "model")
    updates = service(device, host)
    bundle = {
        "selftest_nan": bundles["nan"],
        "identity": relabelled(bundles["3"], version="3.0.1"),
        "model": bundles["3"],
    }[bad]
    answer = push(updates, bundle)
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, bad), answer
    assert slot_versions(updates) == BEFORE and leftovers(device) == []
    assert updates.journal.header is None
    host.refuse_load = False
    rolled = call(updates, pb.UpdateRequest(rollback=pb.SlotRequest(name="lane")))  # the target is still there
    assert rolled.installed.slot == "a" and slot_versions(updates)["active"] == "a"


# ---------------------------------------------------------------- power cuts


def cut_power(folder: Path, step: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, CRASH_ENV: step}
    return subprocess.run(
        [sys.executable, str(CHILD), str(folder), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=CHILD.parent,
    )


def boot(folder: Path) -> UpdateService:
    """The device after a power cut: a fresh update service on its storage."""
    return service(folder)


@pytest.mark.parametrize("step", list(PUSH_STEPS))
def test_a_power_cut_at_each_step_of_a_push_keeps_the_previous_model(
    device: Path, bundles: dict[str, Bundle], tmp_path: Path, step: str
) -> None:
    path = write_bundle(bundles["3"], tmp_path / "lane-3.scb")
    cut = cut_power(device, step, str(path))
    assert cut.returncode == -signal.SIGKILL, f"not killed at {step}: {cut.stdout}{cut.stderr[-2000:]}"
    updates = boot(device)
    assert slot_versions(updates) == PUSH_STEPS[step]  # 2.0.0 active, or the rollback target of 3.0.0
    assert leftovers(device) == []
    answer = push(updates, bundles["3"])  # the host pushes again: only what is missing is done
    if answer.reason == "already_installed" and not answer.installed.activated:
        answer = call(updates, pb.UpdateRequest(activate=pb.SlotRequest(name="lane", slot=answer.installed.slot)))
    assert answer.status == pb.STATUS_OK, answer
    assert slot_versions(updates) == PUSHED


@pytest.mark.parametrize("step", FAILED_STEPS)
def test_a_power_cut_at_each_step_of_a_failed_push_keeps_both_slots(
    device: Path, bundles: dict[str, Bundle], tmp_path: Path, step: str
) -> None:
    path = write_bundle(bundles["nan"], tmp_path / "lane-nan.scb")
    cut = cut_power(device, step, str(path))
    assert cut.returncode == -signal.SIGKILL, f"not killed at {step}: {cut.stdout}{cut.stderr[-2000:]}"
    updates = boot(device)
    assert slot_versions(updates) == BEFORE and leftovers(device) == []
    assert push(updates, bundles["nan"]).reason == "selftest_nan"  # refused again, and still nothing lost
    assert slot_versions(updates) == BEFORE


def test_a_power_cut_while_a_re_pushed_rollback_target_is_activated_keeps_both_slots(device: Path) -> None:
    cut = cut_power(device, "during_activate", "--activate", "lane", "a")
    assert cut.returncode == -signal.SIGKILL, cut.stdout + cut.stderr[-2000:]
    updates = boot(device)
    assert slot_versions(updates) == BEFORE
    assert call(updates, pb.UpdateRequest(activate=pb.SlotRequest(name="lane", slot="a"))).installed.activated
    assert slot_versions(updates) == {"active": "a", "previous": "b", "a": "1.0.0", "b": "2.0.0"}
