"""Tests that run *inside* the USB VM (see usbvm.py): gadget and host on one real (emulated) USB bus.

Not collected on the host (no ``test_`` prefix); ``test_usb_vm.py`` boots the
VM, runs this file there and reports each test's outcome. Every test here
skips unless ``$SEEDCAM_USBVM_WORK`` is set (only the VM's guest script sets it).

``TestSdk`` runs the real firmware twice, one daemon on the bulk link and one
on the ACM port of the same composite gadget (started in parallel: a firmware
start is the slowest thing under emulation), and drives them through the public
SDK; ``TestRawLink`` then runs gadget-side echo processes (FunctionFS bulk and
ACM) and checks the transports byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import wait_until

from seedcam_firmware.launcher import EmulatedBoard

WORK = Path(os.environ.get("SEEDCAM_USBVM_WORK", "/nonexistent"))
pytestmark = pytest.mark.skipif("SEEDCAM_USBVM_WORK" not in os.environ, reason="runs only inside the USB VM")

HERE = Path(__file__).resolve().parent
SERIAL = "SCVM0001"
FFS = "/dev/ffs-seedcam"
FFS_URL = f"ffs://{FFS}"
USB_URL = f"usb://1209:5eed/{SERIAL}"
START_S = 240.0  # the firmware imports numpy, OpenCV and LiteRT under TCG emulation: slow
POLL_S = 0.05  # under emulation a poll costs: seedcam_ports() enumerates the bus


def firmware_cli(*args: str) -> None:
    """Run ``seedcam-firmware ARGS`` in this process (a Python start costs seconds under emulation)."""
    from seedcam_firmware.cli import main

    assert main(list(args)) == 0, f"seedcam-firmware {' '.join(args)} failed (its error is in the captured stderr)"


class Children:
    """Processes and emulated boards started by a test class; terminated (then killed) at teardown."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.boards: dict[str, EmulatedBoard] = {}

    def start(self, name: str, *argv: str) -> subprocess.Popen[bytes]:
        log = (WORK / f"{name}.log").open("ab")
        proc = subprocess.Popen([sys.executable, *argv], stdout=log, stderr=subprocess.STDOUT, cwd=WORK)
        self.procs.append(proc)
        return proc

    def start_board(self, name: str, *args: str) -> EmulatedBoard:
        """``seedcam-firmware run ARGS`` (ARGS choose the link), logging to ``WORK/<name>.log``; not waited for."""
        board = EmulatedBoard(*args, workdir=WORK, link_name=None, log_name=f"{name}.log")
        self.boards[name] = board
        return board.start()

    def stop_all(self) -> None:
        for proc in [*self.procs, *(b.proc for b in self.boards.values() if b.proc is not None)]:
            if proc.poll() is None:
                proc.terminate()  # all at once: each stop takes seconds under emulation
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        for board in self.boards.values():
            board.terminate(20)
        self.procs.clear()
        self.boards.clear()


def gadget_up_and_bind(
    children: Children,
    start_ffs_holder: Callable[[], object],
    ready: Callable[[], bool],
    also_start: Callable[[], object] = lambda: None,
) -> None:
    """``usb-gadget up``, start the process that holds FunctionFS, then bind (the order the kernel needs).

    ``also_start`` starts other gadget-side processes meanwhile (they start in parallel).
    """
    firmware_cli("usb-gadget", "up", "--serial", SERIAL)
    start_ffs_holder()
    also_start()
    wait_until(ready, START_S, "the FunctionFS holder to write its descriptors", interval=POLL_S)
    firmware_cli("usb-gadget", "bind", "--timeout", "60")


def teardown_gadget(children: Children) -> None:
    """Stop the gadget's processes, then ``usb-gadget down`` (which needs functionfs released)."""
    children.stop_all()
    firmware_cli("usb-gadget", "down")
    assert not Path("/sys/kernel/config/usb_gadget/seedcam").exists()


def _acm_device() -> str:
    from seedcam.ports import seedcam_ports

    acm = [p.device for p in seedcam_ports() if not p.device.startswith("usb://")]
    assert len(acm) == 1, acm
    return acm[0]


# ---------------------------------------------------------------------------- the firmware through the SDK


@pytest.fixture(scope="class")
def sdk_gadget() -> Iterator[Children]:
    children = Children()
    common = ["--camera", "synthetic", "--log-level", "info", "--set", f"device.serial_number={SERIAL}"]
    try:
        gadget_up_and_bind(
            children,
            lambda: children.start_board("fw-bulk", *common, "--fps", "3", "--tasks", "lane", "--link", FFS_URL),
            lambda: Path(FFS, "ep1").exists(),
            lambda: children.start_board("fw-acm", *common, "--fps", "2", "--tasks", "", "--link", "/dev/ttyGS0"),
        )
        # a request sent before the daemon opened ttyGS0 meets a cooked tty and is lost: wait for its ready line
        children.boards["fw-acm"].wait_ready(START_S)
        assert children.boards["fw-acm"].link == "/dev/ttyGS0"
        yield children
    finally:
        teardown_gadget(children)


@pytest.mark.usefixtures("sdk_gadget")
class TestSdk:
    def test_results_over_bulk(self) -> None:
        import seedcam

        with seedcam.open(serial=SERIAL, timeout=START_S) as sensor:
            assert sensor.url == USB_URL
            assert sensor.device_info.serial_number == SERIAL
            results = [sensor.recv(timeout=60) for _ in range(3)]
        assert all(r is not None for r in results)
        ids = [r.frame_id for r in results]
        assert ids == sorted(ids) and len(set(ids)) == 3

    def test_results_over_acm(self) -> None:
        import seedcam

        with seedcam.open(_acm_device(), timeout=START_S) as sensor:
            assert sensor.device_info.serial_number == SERIAL
            results = [sensor.recv(timeout=60) for _ in range(2)]
        assert all(r is not None for r in results)

    @pytest.mark.parametrize("frame_size", [512, 1024])
    def test_sdk_frames_of_exact_packet_multiples(self, frame_size: int) -> None:
        """A ping whose request frame is exactly 512/1024 bytes on the wire is answered (no stall)."""
        import seedcam
        from seedcam._proto import seedcam_pb2 as pb
        from seedcam.protocol.framing import Channel, Frame, encode_frame

        with seedcam.open(USB_URL, timeout=START_S) as sensor:
            seq = sensor.session._encoder._next_seq.get(Channel.CONTROL, 0)  # the number the ping will carry
            for n in range(frame_size - 40, frame_size):
                request = pb.Request(ping=pb.PingRequest(payload=b"\x55" * n)).SerializeToString()
                if len(encode_frame(Frame(Channel.CONTROL, seq, request))) == frame_size:
                    break
            else:
                raise AssertionError(f"no ping payload gives a {frame_size}-byte frame")
            assert sensor.ping(b"\x55" * n, timeout=30) < 30

    def test_unbind_rebind_mid_stream_is_survived(self) -> None:
        import seedcam

        events: list[seedcam.ReconnectEvent] = []
        with seedcam.open(USB_URL, timeout=START_S) as sensor:
            sensor.on_reconnect(events.append)
            first = sensor.recv(timeout=60)
            assert first is not None
            firmware_cli("usb-gadget", "unbind")
            wait_until(lambda: not sensor.connected, 30, "the host to see the unplug", interval=POLL_S)
            firmware_cli("usb-gadget", "bind", "--timeout", "60")
            wait_until(lambda: events, 120, "auto-reconnect after the rebind", interval=POLL_S)
            assert events[0].device_rebooted is False  # the same firmware instance: a cable glitch
            after = sensor.recv(timeout=60)
            while after is not None and after.frame_id <= first.frame_id:
                after = sensor.recv(timeout=60)
            assert after is not None and after.frame_id > first.frame_id
            assert sensor.stats.reconnects >= 1


# ---------------------------------------------------------------------------- raw link, byte for byte


@pytest.fixture(scope="class")
def echo_gadget() -> Iterator[Children]:
    children = Children()
    ffs_ready, acm_ready = WORK / "echo-ffs.ready", WORK / "echo-acm.ready"
    try:
        gadget_up_and_bind(
            children,
            lambda: children.start("echo-ffs", str(HERE / "vm_echo.py"), FFS_URL, str(ffs_ready)),
            ffs_ready.exists,
            lambda: children.start("echo-acm", str(HERE / "vm_echo.py"), "/dev/ttyGS0", str(acm_ready)),
        )
        wait_until(acm_ready.exists, START_S, "the ACM echo", interval=POLL_S)
        from seedcam.ports import seedcam_ports

        wait_until(lambda: len(seedcam_ports()) == 2, 30, "the host to enumerate the gadget", interval=POLL_S)
        yield children
    finally:
        teardown_gadget(children)


def _echo(transport, payload: bytes, timeout: float) -> bytes:  # noqa: ANN001 - any Transport
    """Write ``payload`` while reading the echo back; returns what came back within ``timeout``."""
    back = bytearray()
    writer = threading.Thread(target=transport.write, args=(payload, timeout), daemon=True)
    writer.start()
    deadline = time.monotonic() + timeout
    while len(back) < len(payload) and time.monotonic() < deadline:
        back += transport.read(1 << 20, max(0.0, min(0.5, deadline - time.monotonic())))
    writer.join(timeout)
    return bytes(back)


@pytest.mark.usefixtures("echo_gadget")
class TestRawLink:
    def test_discovery_lists_both_paths_with_vid_pid_serial(self) -> None:
        import seedcam.cli
        from seedcam.discovery import resolve_url
        from seedcam.errors import NoSensorFound
        from seedcam.ports import seedcam_ports

        ports = {p.device: p for p in seedcam_ports()}
        assert USB_URL in ports, ports
        acm = _acm_device()
        assert acm.startswith("/dev/ttyACM")
        for port in (ports[USB_URL], ports[acm]):
            assert (port.vid, port.pid, port.serial_number) == (0x1209, 0x5EED, SERIAL)
        assert ports[USB_URL].manufacturer == "seedcam"
        # one sensor reachable two ways counts once, and the bulk URL wins
        assert resolve_url() == USB_URL
        assert resolve_url(serial=SERIAL) == USB_URL
        with pytest.raises(NoSensorFound, match="NOPE"):
            resolve_url(serial="NOPE")
        from io import StringIO

        out = StringIO()
        assert seedcam.cli.main(["ports"], out=out) == 0
        assert USB_URL in out.getvalue() and acm in out.getvalue() and "1209:5eed" in out.getvalue()

    def test_vendor_interface_found_by_class_not_number(self) -> None:
        from seedcam.transport import open_transport

        with open_transport(USB_URL) as link:
            assert link._interface == 2  # ACM takes 0 and 1 in the composite
            assert link.max_packet == 512  # dummy_hcd runs at high speed
            assert link.serial_number == SERIAL

    @pytest.mark.parametrize("size", [1, 511, 512, 513, 1024, 4096, 65536])
    def test_bulk_echo_exact_sizes_do_not_stall(self, size: int) -> None:
        from seedcam.transport import open_transport

        payload = os.urandom(size)
        with open_transport(USB_URL) as link:
            start = time.monotonic()
            assert _echo(link, payload, 10.0) == payload
            # without the zero-length packets a 512/1024-byte write never completes on the gadget
            assert time.monotonic() - start < 10.0

    def test_4mb_over_bulk_arrives_intact(self) -> None:
        from seedcam.transport import open_transport

        payload = os.urandom(4 << 20)
        with open_transport(USB_URL) as link:
            back = _echo(link, payload, 120.0)
        assert len(back) == len(payload)
        assert hashlib.sha256(back).hexdigest() == hashlib.sha256(payload).hexdigest()

    def test_acm_echo(self) -> None:
        from seedcam.transport import open_transport

        payload = os.urandom(4096)
        with open_transport(_acm_device()) as link:
            assert _echo(link, payload, 20.0) == payload

    def test_bench_bulk_vs_acm(self) -> None:
        """Echo throughput, bulk vs ACM (VM figures, for comparison only). Writes bench-usb.json."""
        from seedcam.transport import open_transport

        report: dict[str, dict[str, float]] = {}
        for name, url, size in (("bulk", USB_URL, 4 << 20), ("acm", _acm_device(), 1 << 20)):
            payload = os.urandom(size)
            with open_transport(url) as link:
                start = time.monotonic()
                back = _echo(link, payload, 120.0)
                elapsed = time.monotonic() - start
            report[name] = {
                "bytes": size,
                "echoed": len(back),
                "intact": back == payload,
                "seconds": round(elapsed, 3),
                "mb_per_s": round(len(back) / elapsed / 1e6, 2),
            }
        (WORK / "bench-usb.json").write_text(json.dumps(report, indent=2))
        assert report["bulk"]["intact"]
        assert report["bulk"]["mb_per_s"] > 0
