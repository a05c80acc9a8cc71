"""Preview frames as Foxglove's own schemas: ``foxglove.CompressedImage`` and ``foxglove.ImageAnnotations``.

Foxglove's (and Lichtblick's) Image panel shows a ``CompressedImage`` topic and
draws an ``ImageAnnotations`` topic over it when both carry the same timestamp:
here the frame's capture time (sensor clock), so each frame gets its own
result's boxes: a closed line around each detection and a text with its label
and score (text lines with their text). Boxes are in the preview's pixels.
"""

from __future__ import annotations

from typing import Any

from seedcam._proto import seedcam_pb2 as pb
from seedcam.types import Box, PreviewFrame, Result

__all__ = ["FRAME_ID", "compressed_image", "image_annotations", "preview_chunk"]

#: the ``frame_id`` (coordinate frame) of the images
FRAME_ID = "seedcam_camera"
_BOX_RGBA = (0.1, 0.9, 0.2, 1.0)
_TEXT_RGBA = (1.0, 0.85, 0.1, 1.0)


def _timestamp(out: Any, timestamp_us: int) -> None:
    out.seconds, micros = divmod(timestamp_us, 1_000_000)
    out.nanos = micros * 1000


def preview_chunk(frame: PreviewFrame) -> pb.PreviewChunk:
    """The seedcam topic's message: the whole JPEG as one chunk (offset 0, total_size its size)."""
    return pb.PreviewChunk(
        frame_id=frame.frame_id,
        capture_timestamp_us=frame.timestamp_us,
        width=frame.width,
        height=frame.height,
        offset=0,
        total_size=len(frame.jpeg),
        data=frame.jpeg,
    )


def compressed_image(frame: PreviewFrame) -> Any:
    """The frame as ``foxglove.CompressedImage`` (format ``jpeg``)."""
    from foxglove_schemas_protobuf.CompressedImage_pb2 import CompressedImage

    image = CompressedImage(frame_id=FRAME_ID, data=frame.jpeg, format="jpeg")
    _timestamp(image.timestamp, frame.timestamp_us)
    return image


def _loop(box: Box, width: int, height: int, timestamp_us: int) -> Any:
    from foxglove_schemas_protobuf.PointsAnnotation_pb2 import PointsAnnotation

    line = PointsAnnotation(type=PointsAnnotation.LINE_LOOP, thickness=2.0)
    _timestamp(line.timestamp, timestamp_us)
    x0, y0, x1, y1 = box.x_min * width, box.y_min * height, box.x_max * width, box.y_max * height
    for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1)):
        line.points.add(x=x, y=y)
    line.outline_color.r, line.outline_color.g, line.outline_color.b, line.outline_color.a = _BOX_RGBA
    return line


def _text(text: str, box: Box, width: int, height: int, timestamp_us: int) -> Any:
    from foxglove_schemas_protobuf.TextAnnotation_pb2 import TextAnnotation

    label = TextAnnotation(text=text, font_size=12.0)
    _timestamp(label.timestamp, timestamp_us)
    label.position.x, label.position.y = box.x_min * width, max(0.0, box.y_min * height - 2.0)
    label.text_color.r, label.text_color.g, label.text_color.b, label.text_color.a = _TEXT_RGBA
    label.background_color.a = 0.6
    return label


def image_annotations(frame: PreviewFrame, result: Result) -> Any:
    """The boxes and labels of ``result`` over ``frame``, as ``foxglove.ImageAnnotations``."""
    from foxglove_schemas_protobuf.ImageAnnotations_pb2 import ImageAnnotations

    out = ImageAnnotations()
    w, h, t = frame.width, frame.height, frame.timestamp_us
    for det in result.detections:
        out.points.append(_loop(det.box, w, h, t))
        out.texts.append(_text(f"{det.label} {det.score:.2f}", det.box, w, h, t))
    for line in result.text_lines:
        if line.box is not None:
            out.points.append(_loop(line.box, w, h, t))
            out.texts.append(_text(f"'{line.text}' {line.confidence:.2f}", line.box, w, h, t))
    return out
