"""Our typed results as VisionSeed ``dataV2`` trees, and heartbeats as ``systemStatusResult``.

The model ids below are part of the compatibility contract: a VisionSeed
client reads ``result.getResult([MODEL_DETECTION])`` and expects the same
meaning on every firmware version. They are chosen apart from VisionSeed's own
face-pipeline ids (1-8), so a face script sees "no faces", never our objects.

=====================  ==========================  ===========================================================
path                   node type                   meaning
=====================  ==========================  ===========================================================
``[20]``               VARUINT32                   number of detections (present when the detect task ran)
``[20, i]``            RECT                        detection ``i``: cls = our label index, conf = score,
                                                   x, y, w, h in pixels of the camera frame
``[20, i, 21]``        STRING                      the plate text read on detection ``i`` (ocr task)
``[21]``               VARUINT32                   number of plate readings not tied to a reported detection
                                                   (ocr enabled without detect)
``[21, i]``            STRING                      reading ``i`` of those
``[30]``               ARRAY (4 x float32)         lane: offset_m (+left), heading_rad (+left),
                                                   curvature_1pm (+bends left), confidence (0 when lost)
``[40]``               VARUINT32                   number of classes reported (classify task, best first)
``[40, i]``            CLASSIFICATION              class ``i``: cls = class index, conf = score
=====================  ==========================  ===========================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from seedcam.types import Detection, LaneStatus, Result, TextLine
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.datav2 import (
    Node,
    array_node,
    classification_node,
    count_node,
    encode_datav2,
    rect_node,
    string_node,
)

__all__ = [
    "MODEL_CLASSIFICATION",
    "MODEL_DETECTION",
    "MODEL_LANE",
    "MODEL_PLATE_OCR",
    "datav2_nodes",
    "free_memory_bytes",
    "heartbeat_message",
    "result_message",
]

MODEL_DETECTION = 20  #: object detector: count, one RECT per object
MODEL_PLATE_OCR = 21  #: plate reader (CTC OCR): STRING children of plate RECTs
MODEL_LANE = 30  #: lane state: one ARRAY
MODEL_CLASSIFICATION = 40  #: scene classifier: count, one CLASSIFICATION per class

_INT32_MAX = 2**31 - 1
_SAME_PLATE_IOU = 0.5


def _tasks_run(result: Result) -> set[str]:
    """The tasks that ran on the frame (the runner times every one of them as ``task:<name>``)."""
    return {key[5:] for key in result.timings_us if key.startswith("task:")}


def _match_lines(
    detections: Sequence[Detection], lines: Iterable[TextLine]
) -> tuple[dict[int, TextLine], list[TextLine]]:
    """Pair each text line with the detection it was read on (same box, else the best IoU >= 0.5)."""
    by_detection: dict[int, TextLine] = {}
    unmatched: list[TextLine] = []
    for line in lines:
        best, best_iou = None, _SAME_PLATE_IOU
        if line.box is not None:
            for index, det in enumerate(detections):
                if index in by_detection:
                    continue
                if det.box == line.box:
                    best = index
                    break
                iou = det.box.iou(line.box)
                if iou >= best_iou:
                    best, best_iou = index, iou
        if best is None:
            unmatched.append(line)
        else:
            by_detection[best] = line
    return by_detection, unmatched


def _lane_confidence(result: Result) -> float:
    lane = result.lane
    assert lane is not None
    if lane.status is LaneStatus.LOST:
        return 0.0
    return min(lane.offset_confidence, lane.heading_confidence)


def datav2_nodes(result: Result) -> list[Node]:
    """The ``dataV2`` records of one Result (see the table in the module docstring)."""
    tasks = _tasks_run(result)
    width, height = result.frame_width, result.frame_height
    detections = result.detections
    by_detection, unmatched = _match_lines(detections, result.text_lines)
    nodes: list[Node] = []
    if detections or "detect" in tasks:
        nodes.append(count_node([MODEL_DETECTION], len(detections)))
        for index, det in enumerate(detections):
            box = det.box
            nodes.append(
                rect_node(
                    [MODEL_DETECTION, index],
                    det.score,
                    det.class_id,
                    box.x_min * width,
                    box.y_min * height,
                    box.width * width,
                    box.height * height,
                )
            )
            line = by_detection.get(index)
            if line is not None:
                nodes.append(string_node([MODEL_DETECTION, index, MODEL_PLATE_OCR], line.confidence, line.text))
    if unmatched or ("ocr" in tasks and "detect" not in tasks):
        nodes.append(count_node([MODEL_PLATE_OCR], len(unmatched)))
        nodes.extend(string_node([MODEL_PLATE_OCR, i], line.confidence, line.text) for i, line in enumerate(unmatched))
    if result.lane is not None:
        lane = result.lane
        values = (lane.offset_m, lane.heading_rad, lane.curvature_per_m, _lane_confidence(result))
        nodes.append(array_node([MODEL_LANE], values))
    if result.classifications or "classify" in tasks:
        nodes.append(count_node([MODEL_CLASSIFICATION], len(result.classifications)))
        nodes.extend(
            classification_node([MODEL_CLASSIFICATION, i], c.score, c.class_id)
            for i, c in enumerate(result.classifications)
        )
    return nodes


def result_message(result: Result) -> vs.YtMsg:
    """One Result as the ``YtMsg{result{frameId, frameTimestampUs, dataV2}}`` a VisionSeed client reads.

    Raises:
        ValueError: the tree does not fit ``dataV2`` (more than 255 records).
    """
    return vs.YtMsg(
        result=vs.YtResult(
            frameId=result.frame_id,
            frameTimestampUs=result.capture_timestamp_us,
            dataV2=encode_datav2(datav2_nodes(result)),
        )
    )


def free_memory_bytes(meminfo: Path = Path("/proc/meminfo")) -> int:
    """Memory available to new work (``MemAvailable``), clamped to int32; 0 when unknown."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return min(int(line.split()[1]) * 1024, _INT32_MAX)
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _temperatures(root: Path = Path("/sys/class/thermal")) -> list[float]:
    """The board's thermal-zone readings in degrees Celsius (none on a box without them)."""
    values = []
    for zone in sorted(root.glob("thermal_zone*/temp")):
        try:
            values.append(int(zone.read_text().strip()) / 1000.0)
        except (OSError, ValueError):
            continue
    return values


def heartbeat_message(heartbeat_id: int, *, frame_id: int = 0, timestamp_us: int = 0) -> vs.YtMsg:
    """A ``systemStatusResult`` heartbeat: id 0 once after boot, then counting up."""
    status = vs.SystemStatusResult(
        heartBeatId=heartbeat_id & _INT32_MAX, freeHeap=free_memory_bytes(), temperatures=_temperatures()
    )
    return vs.YtMsg(result=vs.YtResult(frameId=frame_id, frameTimestampUs=timestamp_us, systemStatusResult=status))
