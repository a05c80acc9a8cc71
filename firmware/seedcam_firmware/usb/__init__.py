"""The sensor as a USB device: a configfs composite gadget (CDC-ACM + vendor bulk).

* :mod:`~seedcam_firmware.usb.gadget` builds and removes the configfs gadget
  (``seedcam-firmware usb-gadget up|down|bind|unbind``).
* :mod:`~seedcam_firmware.usb.descriptors` packs the FunctionFS descriptor and
  string blobs with :mod:`struct` and parses ep0 events.
* :mod:`~seedcam_firmware.usb.ffs` holds a FunctionFS instance open and offers
  the ``ffs:///mountpoint`` link transport: the seedcam framed protocol over the
  vendor interface's bulk endpoints.

FunctionFS is driven with the standard library only (``os``, ``struct``,
``threading``): the kernel interface is a handful of files and two fixed blob
layouts, and a Python binding (e.g. ``python-functionfs``) would add a
dependency on the board for about 150 lines of code we can test directly.
"""

from __future__ import annotations

__all__: list[str] = []
