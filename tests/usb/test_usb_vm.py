"""The USB gadget and the host SDK over a real (emulated) USB bus, and a real V4L2 camera: one VM boot.

Boots shared/usbvm/usb-vm.sh once per session with the kernel's vivid virtual
video driver loaded (vm_media.py), runs ``vm_scenarios.py`` inside it (gadget
up/bind/unbind/down, FunctionFS bulk and CDC-ACM, the firmware and the SDK) and
then ``vm_v4l2.py`` (the V4L2 camera source and the firmware on vivid's
``/dev/video0``), and turns each in-VM test into a test here, so a failure names
the scenario and shows its traceback. Skips only when the VM cannot boot on this
machine at all (no usb-vm.sh, or no QEMU and no way to install it).
"""

from __future__ import annotations

import json

import pytest
import usbvm
import vm_media

pytestmark = [pytest.mark.usbvm, pytest.mark.timeout(2000)]

#: The in-VM tests, as ``Class::test[param]``; each must have run and passed.
SCENARIOS = [
    "TestSdk::test_results_over_bulk",
    "TestSdk::test_results_over_acm",
    "TestSdk::test_sdk_frames_of_exact_packet_multiples[512]",
    "TestSdk::test_sdk_frames_of_exact_packet_multiples[1024]",
    "TestSdk::test_unbind_rebind_mid_stream_is_survived",
    "TestRawLink::test_discovery_lists_both_paths_with_vid_pid_serial",
    "TestRawLink::test_vendor_interface_found_by_class_not_number",
    *(f"TestRawLink::test_bulk_echo_exact_sizes_do_not_stall[{n}]" for n in (1, 511, 512, 513, 1024, 4096, 65536)),
    "TestRawLink::test_4mb_over_bulk_arrives_intact",
    "TestRawLink::test_acm_echo",
    "TestRawLink::test_bench_bulk_vs_acm",
    "TestV4l2Camera::test_captures_the_test_pattern_at_a_driver_size",
    "TestV4l2Camera::test_a_size_the_driver_lacks_is_fitted",
    *(f"TestV4l2Camera::test_pixel_formats[{f}]" for f in ("YUYV", "UYVY", "RGB3", "NV12")),
    "TestV4l2Camera::test_a_format_the_driver_lacks_is_refused",
    *(f"TestV4l2Camera::test_frame_rate[{fps}]" for fps in (15.0, 30.0)),
    "TestV4l2Camera::test_a_device_that_disappears_fails_reads_then_comes_back",
    "TestFirmwareOnV4l2::test_results_and_a_snapshot_of_the_pattern",
    "TestFirmwareOnV4l2::test_an_unplugged_camera_shows_in_health_and_results_resume",
]


@pytest.fixture(scope="session")
def vm_run() -> usbvm.VmRun:
    reason = usbvm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    try:
        vivid = [
            (path, vm_media.VIVID_PARAMS if path.name.endswith("-vivid.ko") else "")
            for path in vm_media.vivid_modules()
        ]
    except vm_media.MediaModulesUnavailable as exc:
        pytest.fail(f"the VM's kernel media modules (vivid) cannot be had: {exc}")
    run = usbvm.run_in_vm("tests/usb/vm_scenarios.py", "tests/usb/vm_v4l2.py", modules=vivid)
    if not run.outcomes:
        pytest.fail(
            f"the VM produced no test results (in-VM pytest rc {run.returncode})\n"
            f"--- console (tail)\n{run.console[-4000:]}\n--- pytest log (tail)\n{run.pytest_log[-4000:]}"
        )
    timing = [line for line in run.console.splitlines() if line.startswith("[usb-vm]")]
    print("\n".join(timing))
    return run


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_in_vm(vm_run: usbvm.VmRun, scenario: str) -> None:
    outcome = vm_run.outcomes.get(scenario)
    assert outcome is not None, f"{scenario} did not run in the VM; ran: {sorted(vm_run.outcomes)}"
    assert outcome == "passed", f"{scenario}: {outcome}\n{vm_run.messages.get(scenario, '')}"


def test_every_vm_scenario_is_checked(vm_run: usbvm.VmRun) -> None:
    assert sorted(vm_run.outcomes) == sorted(SCENARIOS)


def test_bench_figures_were_written(vm_run: usbvm.VmRun) -> None:
    report = json.loads((vm_run.work / "bench-usb.json").read_text())
    print(
        f"\nUSB echo throughput in the VM: bulk {report['bulk']['mb_per_s']} MB/s, "
        f"ACM {report['acm']['mb_per_s']} MB/s ({report['acm']['echoed']} of {report['acm']['bytes']} bytes back)"
    )
    assert report["bulk"]["intact"]
