"""The CPU's feature flags, which decide how fast int8 kernels run (read by the report and the OCR bundle)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["cpu_flags"]


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (x86 ``flags``, ARM ``Features``); empty where unreadable."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    flags: set[str] = set()
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() in ("flags", "Features"):
            flags.update(value.split())
    return frozenset(flags)
