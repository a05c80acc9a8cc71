"""Run a pytest file inside the USB test VM (shared/usbvm/usb-vm.sh): a real USB bus, no hardware.

The VM boots Debian's stock kernel under QEMU with ``dummy_hcd``, so a configfs
gadget and the USB host stack (usbcore, cdc-acm, usbfs, libusb, pyusb) run in
the same guest and talk over an emulated bus. The guest sees this machine's
root filesystem read-only, so it runs the same ``.venv`` and source tree.

Shared with ``tools/bench_usb.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Environment variable naming usb-vm.sh explicitly.
SCRIPT_ENV = "SEEDCAM_USBVM_SCRIPT"
#: The in-VM tests look for this variable and skip without it.
GUEST_ENV = "SEEDCAM_USBVM_WORK"


def find_usb_vm_script() -> Path | None:
    """usb-vm.sh: ``$SEEDCAM_USBVM_SCRIPT``, else ``../shared/usbvm`` next to the checkout, else /work/shared."""
    candidates = [
        os.environ.get(SCRIPT_ENV, ""),
        REPO.parent / "shared/usbvm/usb-vm.sh",
        "/work/shared/usbvm/usb-vm.sh",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def unavailable_reason() -> str | None:
    """Why the VM cannot boot on this machine, or None when it can (or can install what it needs)."""
    if sys.platform != "linux":
        return "the USB VM needs Linux"
    if find_usb_vm_script() is None:
        return f"usb-vm.sh not found (set ${SCRIPT_ENV}, or check out shared/ next to the repo)"
    if shutil.which("qemu-system-x86_64") is None:
        return "qemu-system-x86_64 is missing (scripts/usbvm-deps.sh installs it; .ci/run runs that)"
    return None


@dataclass
class VmRun:
    """What one VM boot produced."""

    returncode: int  #: in-VM pytest's exit code (-1 when it never ran)
    console: str  #: QEMU console and usb-vm.sh's timing line
    pytest_log: str  #: in-VM pytest's output
    outcomes: dict[str, str] = field(default_factory=dict)  #: test name -> passed/failed/skipped/error
    messages: dict[str, str] = field(default_factory=dict)  #: test name -> failure text
    work: Path = REPO


def workdir() -> Path:
    """The folder shared read-write with the guest (never under /tmp: the guest mounts a tmpfs there)."""
    work = REPO / "build" / "usbvm"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def run_in_vm(
    test_file: str, *pytest_args: str, timeout: int = 1500, modules: Sequence[tuple[Path, str]] = ()
) -> VmRun:
    """Boot the VM, run ``pytest test_file`` in it, and collect the per-test outcomes.

    Args:
        test_file: path relative to the repo root.
        *pytest_args: more arguments for the in-VM pytest (e.g. another file, ``-k bench``).
        timeout: seconds for the whole boot.
        modules: kernel modules (built for the VM's kernel) and their parameters, loaded in this
            order before pytest starts; ``insmod.log`` in the work folder says how each went.

    Raises:
        FileNotFoundError: usb-vm.sh is missing.
    """
    script = find_usb_vm_script()
    if script is None:
        raise FileNotFoundError("usb-vm.sh not found")
    work = workdir()
    # A checkout under /tmp is invisible in the guest (tmpfs there): then share the whole checkout.
    share = REPO if str(REPO).startswith("/tmp/") else work
    args = " ".join(f"'{a}'" for a in pytest_args)
    insmod = "".join(
        f"/bin/busybox insmod {path} {params} >>{work}/insmod.log 2>&1 || echo 'insmod {path.name} failed'"
        f" >>{work}/insmod.log\n"
        for path, params in modules
    )
    guest = work / "guest.sh"
    guest.write_text(
        "#!/bin/bash\n"
        f"export {GUEST_ENV}={work} PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1\n"
        # ptys for emulated boards on a pty link (usb-vm.sh mounts devtmpfs on /dev, not devpts)
        "grep -q ' /dev/pts ' /proc/mounts || { mkdir -p /dev/pts && mount -t devpts devpts /dev/pts; }\n"
        + insmod
        + f"cd {REPO}\n"
        # the guest's own deadline leaves time to power off; a hung test dumps its stacks and exits
        f"timeout -k 10 {max(60, timeout - 90)} {sys.executable} -m pytest -p no:cacheprovider -o addopts= "
        f"-o timeout={max(60, timeout - 120)} -o timeout_method=thread -q -rA --tb=short "
        f"--log-file={work}/pytest-debug.log --log-file-level=DEBUG {test_file} {args} "
        f"--junitxml={work}/junit.xml >{work}/pytest.log 2>&1\n"
        f"echo $? >{work}/pytest.rc\n"
    )
    env = dict(os.environ)
    proc = subprocess.run(
        ["bash", str(script), str(share), str(guest), str(timeout)],
        capture_output=True,
        text=True,
        timeout=timeout + 300,
        env=env,
    )
    console = proc.stdout + proc.stderr
    rc_file = work / "pytest.rc"
    run = VmRun(
        returncode=int(rc_file.read_text()) if rc_file.is_file() else -1,
        console=console,
        pytest_log=(work / "pytest.log").read_text(errors="replace") if (work / "pytest.log").is_file() else "",
        work=work,
    )
    junit = work / "junit.xml"
    if junit.is_file():
        for case in ET.parse(junit).getroot().iter("testcase"):
            name = f"{case.get('classname', '').rpartition('.')[2]}::{case.get('name')}"
            outcome, text = "passed", ""
            for kind in ("failure", "error", "skipped"):
                node = case.find(kind)
                if node is not None:
                    outcome = "failed" if kind == "failure" else kind
                    text = (node.get("message") or "") + "\n" + (node.text or "")
            run.outcomes[name] = outcome
            run.messages[name] = text
    return run
