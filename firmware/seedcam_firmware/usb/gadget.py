"""The configfs composite gadget: CDC-ACM (``/dev/ttyGS0``) plus the FunctionFS vendor bulk interface.

Order matters, and the kernel enforces it:

``up``
    create the gadget directory (ids, strings with the device serial, one
    configuration), the ``acm`` function and the ``ffs`` function, link both
    into the configuration (ACM first, so the vendor interface is number 2),
    and mount the functionfs instance. The gadget is *not* bound yet: binding
    fails with ENODEV until a process has written the FunctionFS descriptors.
``bind``
    write the UDC name into ``UDC``, retrying while FunctionFS is not ready
    (the firmware daemon with ``--link ffs:///dev/ffs-seedcam`` writes them at
    start).
``unbind``
    write an empty line into ``UDC``: the host sees an unplug.
``down``
    unbind, unmount functionfs (the daemon must have stopped: it holds ep0),
    remove the links, functions, strings and the gadget directory, innermost
    first.

All of it needs root, configfs at ``/sys/kernel/config`` and the
``libcomposite``, ``usb_f_acm`` and ``usb_f_fs`` modules.
"""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from seedcam.port_info import SEEDCAM_PID, SEEDCAM_VID
from seedcam_firmware.errors import FirmwareError

__all__ = ["GadgetError", "GadgetSpec", "bind", "default_udc", "down", "is_bound", "unbind", "up"]

log = logging.getLogger(__name__)

CONFIGFS = Path("/sys/kernel/config/usb_gadget")
UDC_CLASS = Path("/sys/class/udc")
_LANG = "0x409"
_CONFIG = "c.1"


class GadgetError(FirmwareError, OSError):
    """The gadget could not be set up, bound or removed; the message says which step failed."""


@dataclass(frozen=True)
class GadgetSpec:
    """What the gadget looks like to a host.

    Attributes:
        serial: the USB serial number string; use the daemon's ``device.serial_number``
            so that ``seedcam ports`` and ``DeviceInfo`` agree.
        name: the configfs gadget directory name.
        ffs_instance: the FunctionFS instance name (``functions/ffs.<name>``, mount source).
        ffs_mount: where functionfs is mounted; the firmware link is ``ffs://<ffs_mount>``.
        vid: USB vendor id.
        pid: USB product id.
        manufacturer: the manufacturer string.
        product: the product string.
        max_power_ma: the configuration's bMaxPower in mA.
    """

    serial: str
    name: str = "seedcam"
    ffs_instance: str = "seedcam"
    ffs_mount: str = "/dev/ffs-seedcam"
    vid: int = SEEDCAM_VID
    pid: int = SEEDCAM_PID
    manufacturer: str = "seedcam"
    product: str = "seedcam AI vision sensor"
    max_power_ma: int = 250

    @property
    def path(self) -> Path:
        """The gadget's configfs directory."""
        return CONFIGFS / self.name


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value + "\n")
    except OSError as exc:
        raise GadgetError(exc.errno, f"cannot write {value!r} to {path}: {exc.strerror}") from exc


def _is_mounted(mountpoint: str) -> bool:
    target = os.path.realpath(mountpoint)
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        return any(line.split()[1] == target for line in mounts if len(line.split()) > 2)


def _run(*command: str) -> None:
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=30)
    except subprocess.CalledProcessError as exc:
        raise GadgetError(f"{' '.join(command)} failed: {exc.stderr.strip() or exc.returncode}") from exc
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GadgetError(f"{' '.join(command)} failed: {exc}") from exc


def default_udc() -> str:
    """The only USB device controller of this machine.

    Raises:
        GadgetError: none or several (then pass one explicitly).
    """
    names = sorted(p.name for p in UDC_CLASS.iterdir()) if UDC_CLASS.is_dir() else []
    if len(names) != 1:
        raise GadgetError(
            errno.ENODEV,
            f"need exactly one USB device controller in {UDC_CLASS}, found {names or 'none'} "
            "(load the board's UDC driver, or dummy_hcd for tests; or name one with --udc)",
        )
    return names[0]


def up(spec: GadgetSpec) -> None:
    """Create the composite gadget and mount its functionfs; idempotent. Does not bind.

    Raises:
        GadgetError: configfs is missing, a module is not loaded, or a step failed.
    """
    if not CONFIGFS.is_dir():
        raise GadgetError(errno.ENOENT, f"{CONFIGFS} is missing: mount configfs and load libcomposite")
    g = spec.path
    try:
        g.mkdir(exist_ok=True)  # the kernel fills in strings/, configs/ and functions/
        (g / f"configs/{_CONFIG}").mkdir(exist_ok=True)
        (g / f"configs/{_CONFIG}/strings/{_LANG}").mkdir(exist_ok=True)
        (g / f"strings/{_LANG}").mkdir(exist_ok=True)
    except OSError as exc:
        raise GadgetError(exc.errno, f"cannot create the gadget in {g}: {exc.strerror}") from exc
    _write(g / "idVendor", f"0x{spec.vid:04x}")
    _write(g / "idProduct", f"0x{spec.pid:04x}")
    _write(g / "bcdDevice", "0x0100")
    _write(g / "bcdUSB", "0x0200")
    # Miscellaneous class with interface association descriptors: what a composite with ACM must announce.
    _write(g / "bDeviceClass", "0xef")
    _write(g / "bDeviceSubClass", "0x02")
    _write(g / "bDeviceProtocol", "0x01")
    _write(g / f"strings/{_LANG}/manufacturer", spec.manufacturer)
    _write(g / f"strings/{_LANG}/product", spec.product)
    _write(g / f"strings/{_LANG}/serialnumber", spec.serial)
    _write(g / f"configs/{_CONFIG}/strings/{_LANG}/configuration", "ACM + bulk")
    _write(g / f"configs/{_CONFIG}/MaxPower", str(spec.max_power_ma))
    for function in ("acm.usb0", f"ffs.{spec.ffs_instance}"):  # ACM first: interfaces 0-1, vendor bulk 2
        try:
            (g / "functions" / function).mkdir(exist_ok=True)
            link = g / f"configs/{_CONFIG}" / function
            if not link.is_symlink():
                link.symlink_to(g / "functions" / function)
        except OSError as exc:
            raise GadgetError(
                exc.errno, f"cannot add function {function}: {exc.strerror} (is its usb_f_* module loaded?)"
            ) from exc
    Path(spec.ffs_mount).mkdir(parents=True, exist_ok=True)
    if not _is_mounted(spec.ffs_mount):
        _run("mount", "-t", "functionfs", spec.ffs_instance, spec.ffs_mount)
    log.info(
        "gadget %s up: %04x:%04x serial %s, functionfs at %s",
        spec.name,
        spec.vid,
        spec.pid,
        spec.serial,
        spec.ffs_mount,
    )


def is_bound(spec: GadgetSpec) -> bool:
    """True while the gadget is bound to a UDC (plugged in, as far as the host can tell)."""
    try:
        return bool((spec.path / "UDC").read_text().strip())
    except OSError:
        return False


def bind(spec: GadgetSpec, udc: str | None = None, timeout: float = 10.0) -> str:
    """Bind the gadget to a UDC, waiting up to ``timeout`` s for FunctionFS to be ready.

    Returns:
        The UDC name.

    Raises:
        GadgetError: the gadget does not exist, or binding failed for longer than ``timeout``.
        ValueError: ``timeout`` is negative.
    """
    if timeout < 0:
        raise ValueError(f"timeout must be >= 0, got {timeout!r}")
    if not spec.path.is_dir():
        raise GadgetError(errno.ENOENT, f"gadget {spec.name} does not exist; run 'usb-gadget up' first")
    name = udc or default_udc()
    if is_bound(spec):
        return (spec.path / "UDC").read_text().strip()
    deadline = time.monotonic() + timeout
    while True:
        try:
            (spec.path / "UDC").write_text(name + "\n")
            log.info("gadget %s bound to %s", spec.name, name)
            return name
        except OSError as exc:
            # ENODEV: the FunctionFS descriptors are not written yet (the daemon is starting).
            if exc.errno not in (errno.ENODEV, errno.EBUSY) or time.monotonic() >= deadline:
                raise GadgetError(
                    exc.errno,
                    f"cannot bind gadget {spec.name} to {name}: {exc.strerror}"
                    + (
                        " (is the firmware running with --link ffs://" + spec.ffs_mount + "?)"
                        if exc.errno == errno.ENODEV
                        else ""
                    ),
                ) from exc
        time.sleep(0.05)  # polling the kernel: no event tells us when FunctionFS became ready


def unbind(spec: GadgetSpec) -> None:
    """Unbind the gadget from its UDC (the host sees an unplug); a no-op when unbound.

    Raises:
        GadgetError: the kernel refused.
    """
    if is_bound(spec):
        _write(spec.path / "UDC", "")
        log.info("gadget %s unbound", spec.name)


def down(spec: GadgetSpec) -> None:
    """Unbind and remove the gadget, innermost first; idempotent.

    Raises:
        GadgetError: a step failed (most often: functionfs is busy because the
            firmware still holds ep0; stop it first).
    """
    g = spec.path
    if g.is_dir():
        unbind(spec)
    if os.path.isdir(spec.ffs_mount) and _is_mounted(spec.ffs_mount):
        _run("umount", spec.ffs_mount)
    if not g.is_dir():
        return
    try:
        for function in ("acm.usb0", f"ffs.{spec.ffs_instance}"):
            link = g / f"configs/{_CONFIG}" / function
            if link.is_symlink():
                link.unlink()
        for sub in (
            f"configs/{_CONFIG}/strings/{_LANG}",
            f"configs/{_CONFIG}",
            "functions/acm.usb0",
            f"functions/ffs.{spec.ffs_instance}",
            f"strings/{_LANG}",
        ):
            if (g / sub).is_dir():
                (g / sub).rmdir()
        g.rmdir()
    except OSError as exc:
        raise GadgetError(exc.errno, f"cannot remove gadget {spec.name}: {exc.strerror} ({exc.filename})") from exc
    log.info("gadget %s down", spec.name)
