"""The topics of a seedcam recording and the protobuf message of each.

Every topic's messages are protobuf (message encoding ``protobuf``, the schema a
``FileDescriptorSet``), so Foxglove and Lichtblick decode them without a plugin:

=============================  ==============================  ===========================================
topic                          schema                          what
=============================  ==============================  ===========================================
``/seedcam/device_info``       ``seedcam.v1.DeviceInfo``       who the sensor is: at the start, after a Hello
``/seedcam/result``            ``seedcam.v1.Result``           every result, full form (not the wire's compact layout)
``/seedcam/result_dictionary`` ``seedcam.v1.ResultDictionary`` the dictionaries the device announced
``/seedcam/health``            ``seedcam.v1.Health``           every health report
``/seedcam/log``               ``seedcam.v1.LogRecord``        the device's log records
``/seedcam/preview``           ``seedcam.v1.PreviewChunk``     preview JPEGs, whole, with frame ids (``--preview-fps``)
``/seedcam/preview/image``     ``foxglove.CompressedImage``    the same JPEGs, for Foxglove's Image panel
``/seedcam/preview/boxes``     ``foxglove.ImageAnnotations``   the result's boxes over them
=============================  ==============================  ===========================================

Times: a message's ``log_time`` is when it arrived at the host (ns since the Unix
epoch, from a monotonic clock so gaps are exact), its ``publish_time`` the sensor's
time of it (a result's capture time, a health report's or a log record's
timestamp; ns on the sensor's monotonic clock). Replay paces by ``log_time``.
"""

from __future__ import annotations

from typing import Any

from seedcam._proto import seedcam_pb2 as pb

__all__ = [
    "DEVICE_INFO",
    "DICTIONARY",
    "HEALTH",
    "LOG",
    "PREVIEW",
    "PREVIEW_BOXES",
    "PREVIEW_IMAGE",
    "PROFILE",
    "RESULT",
    "SEEDCAM_TOPICS",
    "message_class",
]

DEVICE_INFO = "/seedcam/device_info"
RESULT = "/seedcam/result"
DICTIONARY = "/seedcam/result_dictionary"
HEALTH = "/seedcam/health"
LOG = "/seedcam/log"
PREVIEW = "/seedcam/preview"
PREVIEW_IMAGE = "/seedcam/preview/image"
PREVIEW_BOXES = "/seedcam/preview/boxes"

#: the MCAP header's profile of a seedcam recording
PROFILE = "seedcam"

#: topic -> the full name of its protobuf message (the MCAP schema's name)
SEEDCAM_TOPICS: dict[str, str] = {
    DEVICE_INFO: "seedcam.v1.DeviceInfo",
    RESULT: "seedcam.v1.Result",
    DICTIONARY: "seedcam.v1.ResultDictionary",
    HEALTH: "seedcam.v1.Health",
    LOG: "seedcam.v1.LogRecord",
    PREVIEW: "seedcam.v1.PreviewChunk",
    PREVIEW_IMAGE: "foxglove.CompressedImage",
    PREVIEW_BOXES: "foxglove.ImageAnnotations",
}


def message_class(schema_name: str) -> Any | None:
    """The generated protobuf class of a schema name, or None for one this SDK does not know.

    The foxglove schemas come from ``foxglove-schemas-protobuf`` (``seedcam[record]``).
    """
    if schema_name.startswith("seedcam.v1."):
        return getattr(pb, schema_name.rpartition(".")[2], None)
    if schema_name == "foxglove.CompressedImage":
        from foxglove_schemas_protobuf.CompressedImage_pb2 import CompressedImage

        return CompressedImage
    if schema_name == "foxglove.ImageAnnotations":
        from foxglove_schemas_protobuf.ImageAnnotations_pb2 import ImageAnnotations

        return ImageAnnotations
    return None
