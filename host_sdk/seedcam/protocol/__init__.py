"""The seedcam link protocol, shared by the firmware and the SDK (sans-IO)."""

from seedcam.protocol.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    PROTOCOL_VERSION,
    Channel,
    Decoder,
    Encoder,
    Flag,
    Frame,
    LinkCounters,
    encode_frame,
)

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "PROTOCOL_VERSION",
    "Channel",
    "Decoder",
    "Encoder",
    "Flag",
    "Frame",
    "LinkCounters",
    "encode_frame",
]
