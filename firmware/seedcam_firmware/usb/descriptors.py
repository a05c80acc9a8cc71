"""FunctionFS blobs, packed with :mod:`struct`: descriptors, strings and ep0 events.

The layouts are those of ``<linux/usb/functionfs.h>`` and chapter 9 of the USB
2.0 specification (all multi-byte fields little-endian). The vendor function
has one interface (class 0xFF) with a bulk IN and a bulk OUT endpoint, for
full speed (64-byte packets) and high speed (512-byte packets).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from seedcam.port_info import VENDOR_CLASS

__all__ = [
    "BULK_IN_ADDRESS",
    "BULK_OUT_ADDRESS",
    "FULL_SPEED_PACKET",
    "HIGH_SPEED_PACKET",
    "INTERFACE_STRING",
    "VENDOR_CLASS",
    "Event",
    "EventType",
    "descriptors_blob",
    "parse_events",
    "strings_blob",
]

#: ``FUNCTIONFS_DESCRIPTORS_MAGIC_V2`` and ``FUNCTIONFS_STRINGS_MAGIC``.
_DESCRIPTORS_MAGIC_V2 = 3
_STRINGS_MAGIC = 2
_HAS_FS_DESC = 1
_HAS_HS_DESC = 2

_USB_DT_INTERFACE = 4
_USB_DT_ENDPOINT = 5
_USB_ENDPOINT_XFER_BULK = 2
_LANG_EN_US = 0x0409

#: The interface's name (``iInterface``), shown by ``lsusb -v``.
INTERFACE_STRING = "seedcam bulk link"
#: Endpoint addresses as declared; the composite gadget renumbers them, so the
#: host must find endpoints by direction, never by these numbers.
BULK_IN_ADDRESS = 0x81
BULK_OUT_ADDRESS = 0x02
FULL_SPEED_PACKET = 64
HIGH_SPEED_PACKET = 512

_EVENT = struct.Struct("<BBHHH B 3x")  # struct usb_functionfs_event: usb_ctrlrequest, type, padding


def _interface() -> bytes:
    # bLength, bDescriptorType, bInterfaceNumber, bAlternateSetting, bNumEndpoints,
    # bInterfaceClass, bInterfaceSubClass, bInterfaceProtocol, iInterface (1 = our first string)
    return struct.pack("<BBBBBBBBB", 9, _USB_DT_INTERFACE, 0, 0, 2, VENDOR_CLASS, 0, 0, 1)


def _endpoint(address: int, max_packet: int) -> bytes:
    # bLength, bDescriptorType, bEndpointAddress, bmAttributes, wMaxPacketSize, bInterval
    return struct.pack("<BBBBHB", 7, _USB_DT_ENDPOINT, address, _USB_ENDPOINT_XFER_BULK, max_packet, 0)


def descriptors_blob() -> bytes:
    """The v2 descriptor blob written first to ep0.

    Returns:
        Header (magic, length, flags, full-speed and high-speed descriptor
        counts), then for each speed the interface and its two bulk endpoints.
        After it is written, ``ep1`` is the bulk IN and ``ep2`` the bulk OUT file.
    """
    speeds = [FULL_SPEED_PACKET, HIGH_SPEED_PACKET]
    body = b"".join(
        _interface() + _endpoint(BULK_IN_ADDRESS, size) + _endpoint(BULK_OUT_ADDRESS, size) for size in speeds
    )
    counts = struct.pack("<II", 3, 3)
    header_len = 12 + len(counts)
    head = struct.pack("<III", _DESCRIPTORS_MAGIC_V2, header_len + len(body), _HAS_FS_DESC | _HAS_HS_DESC)
    return head + counts + body


def strings_blob(strings: tuple[str, ...] = (INTERFACE_STRING,)) -> bytes:
    """The string blob written to ep0 after the descriptors (US English only).

    Args:
        strings: the function's strings, index 1 first (``iInterface`` = 1).

    Raises:
        ValueError: a string contains a NUL character.
    """
    if any("\0" in s for s in strings):
        raise ValueError("FunctionFS strings must not contain NUL")
    body = struct.pack("<H", _LANG_EN_US) + b"".join(s.encode() + b"\0" for s in strings)
    return struct.pack("<IIII", _STRINGS_MAGIC, 16 + len(body), len(strings), 1) + body


class EventType(enum.IntEnum):
    """``enum usb_functionfs_event_type``."""

    BIND = 0
    UNBIND = 1
    ENABLE = 2
    DISABLE = 3
    SETUP = 4
    SUSPEND = 5
    RESUME = 6


@dataclass(frozen=True)
class Event:
    """One ep0 event; ``request_type`` .. ``length`` are the SETUP packet (else zeros)."""

    type: EventType | int
    request_type: int = 0
    request: int = 0
    value: int = 0
    index: int = 0
    length: int = 0


#: Size of one ``struct usb_functionfs_event``.
EVENT_SIZE = _EVENT.size


def parse_events(data: bytes) -> list[Event]:
    """Split what a read of ep0 returned into events (a trailing partial event is ignored)."""
    events = []
    for offset in range(0, len(data) - EVENT_SIZE + 1, EVENT_SIZE):
        rtype, req, value, index, length, kind = _EVENT.unpack_from(data, offset)
        try:
            kind = EventType(kind)
        except ValueError:
            pass
        events.append(Event(kind, rtype, req, value, index, length))
    return events
