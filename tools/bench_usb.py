"""Bulk versus CDC-ACM throughput over the USB test VM's bus.

Usage::

    .venv/bin/python tools/bench_usb.py [--json bench-usb.json]

Boots shared/usbvm/usb-vm.sh (QEMU, dummy_hcd), brings up the seedcam gadget
with echo processes on its FunctionFS bulk interface and its ACM port, and
times 4 MiB over bulk and 1 MiB over ACM (written by the host, echoed by the
gadget, read back and compared). The VM is software-emulated: the figures are
for comparing the two paths, not what a board does (USB 2.0 bulk tops out near
53 MB/s on hardware).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark in the VM and print the table; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--timeout", type=int, default=900, help="seconds for the whole VM run")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "tests" / "usb"))
    import usbvm  # the VM runner the tests use

    reason = usbvm.unavailable_reason()
    if reason:
        sys.stderr.write(f"bench_usb: cannot boot the USB VM: {reason}\n")
        return 1
    run = usbvm.run_in_vm("tests/usb/vm_scenarios.py", "-k", "bench", timeout=args.timeout)
    result = run.work / "bench-usb.json"
    if not result.is_file():
        sys.stderr.write(f"bench_usb: no figures (in-VM pytest rc {run.returncode})\n{run.pytest_log[-3000:]}\n")
        return 2
    report = json.loads(result.read_text())
    sys.stdout.write(f"{'path':<6} {'bytes':>10} {'echoed':>10} {'intact':>7} {'seconds':>8} {'MB/s':>7}\n")
    for name, row in report.items():
        sys.stdout.write(
            f"{name:<6} {row['bytes']:>10} {row['echoed']:>10} {str(row['intact']):>7} "
            f"{row['seconds']:>8.2f} {row['mb_per_s']:>7.2f}\n"
        )
    bulk, acm = report["bulk"]["mb_per_s"], report["acm"]["mb_per_s"]
    if acm:
        sys.stdout.write(f"bulk / ACM: {bulk / acm:.1f}x (echo round trip: both directions at once)\n")
    for line in run.console.splitlines():
        if line.startswith("[usb-vm]"):
            sys.stdout.write(line + "\n")
    if args.json:
        shutil.copyfile(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
