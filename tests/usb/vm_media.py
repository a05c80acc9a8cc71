"""The kernel's ``vivid`` virtual video driver for the USB VM: its modules, in load order, from Debian's kernel.

usb-vm.sh boots Debian's stock kernel with only the USB modules in its
initramfs. The guest script loads more modules itself (``busybox insmod``), so
the V4L2 tests get a real ``/dev/video0``: this module finds the kernel package
the VM boots (the one ``linux-image-amd64`` points at, as usb-vm.sh does),
downloads it once with ``apt-get download`` and keeps ``vivid.ko`` and the
modules it depends on (read from each module's ``.modinfo`` section) under the
VM's cache folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["VIVID_PARAMS", "MediaModulesUnavailable", "vivid_modules"]

#: One vivid instance with a video capture node only (no output, VBI, radio, SDR or touch nodes),
#: in the webcam input mode (discrete sizes and frame intervals, like a UVC camera).
VIVID_PARAMS = "n_devs=1 node_types=0x1 input_types=0x0"
_MODULE_DIRS = ("drivers/media",)  # vivid and everything it needs (rc-core, cec and mc included)
_DEPENDS = re.compile(rb"(?:^|\x00)depends=([^\x00]*)\x00")


class MediaModulesUnavailable(RuntimeError):
    """The vivid modules of the VM's kernel cannot be had here (no apt-get, no network)."""


def _cache_dir() -> Path:
    base = os.environ.get("USBVM_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "usbvm"
    return Path(base)


def _kernel_package() -> str:
    try:
        out = subprocess.run(
            ["apt-cache", "depends", "linux-image-amd64"], capture_output=True, text=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise MediaModulesUnavailable(f"cannot ask apt which kernel the VM boots: {exc}") from exc
    match = re.search(r"Depends: (linux-image-[0-9]\S*)", out)
    if match is None:
        raise MediaModulesUnavailable("apt-cache names no linux-image package for linux-image-amd64")
    return match.group(1)


def _depends(module: Path) -> list[str]:
    match = _DEPENDS.search(module.read_bytes())
    if match is None:
        return []
    return [name.decode().replace("-", "_") for name in match.group(1).split(b",") if name]


def _load_order(modules: dict[str, Path], target: str) -> list[str]:
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise MediaModulesUnavailable(f"module dependency cycle: {' -> '.join((*path, name))}")
        if name not in modules:
            raise MediaModulesUnavailable(f"{target} needs module {name}, which is not under {_MODULE_DIRS}")
        for dep in _depends(modules[name]):
            visit(dep, (*path, name))
        order.append(name)

    visit(target, ())
    return order


def _extract(package: str, kver: str, dest: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run(
                ["apt-get", "download", "-q", package], cwd=tmp, capture_output=True, check=True, timeout=600
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise MediaModulesUnavailable(f"apt-get download {package} failed: {exc}") from exc
        deb = next(Path(tmp).glob(f"{package}_*.deb"))
        tree = Path(tmp) / "tree"
        tree.mkdir()
        members = [f"./lib/modules/{kver}/kernel/{d}" for d in _MODULE_DIRS]
        try:
            with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE) as deb_tar:
                subprocess.run(["tar", "-x", "-C", str(tree), *members], stdin=deb_tar.stdout, check=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise MediaModulesUnavailable(f"cannot unpack the media modules of {deb.name}: {exc}") from exc
        root = tree / "lib" / "modules" / kver / "kernel"
        modules = {p.name.removesuffix(".ko").replace("-", "_"): p for p in root.rglob("*.ko")}
        staging = dest.with_name(dest.name + ".part")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for i, name in enumerate(_load_order(modules, "vivid"), 1):
            shutil.copy2(modules[name], staging / f"{i:02d}-{name}.ko")
        shutil.rmtree(dest, ignore_errors=True)
        staging.rename(dest)


def vivid_modules() -> list[Path]:
    """``vivid.ko`` and its dependencies for the VM's kernel, in the order to load them (cached).

    Raises:
        MediaModulesUnavailable: apt cannot name or fetch the kernel package.
    """
    package = _kernel_package()
    kver = package.removeprefix("linux-image-")
    dest = _cache_dir() / kver / "media"
    if not (dest.is_dir() and any(dest.glob("*-vivid.ko"))):
        _extract(package, kver, dest)
    return sorted(dest.glob("*.ko"))
