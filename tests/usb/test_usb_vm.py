"""The USB gadget and the host SDK over a real (emulated) USB bus: one VM boot, many checks.

Boots shared/usbvm/usb-vm.sh once per session, runs ``vm_scenarios.py`` inside
it (gadget up/bind/unbind/down, FunctionFS bulk and CDC-ACM, the firmware and
the SDK), and turns each in-VM test into a test here, so a failure names the
scenario and shows its traceback. Skips only when the VM cannot boot on this
machine at all (no usb-vm.sh, or no QEMU and no way to install it).
"""

from __future__ import annotations

import json

import pytest
import usbvm

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
]


@pytest.fixture(scope="session")
def vm_run() -> usbvm.VmRun:
    reason = usbvm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    run = usbvm.run_in_vm("tests/usb/vm_scenarios.py")
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
