"""Recordings made for the SDK's recording and replay tests: what a sensor sends, as the wire shapes it."""

from __future__ import annotations

from pathlib import Path

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.protocol.compact import CompactDecoder, CompactEncoder
from seedcam.recording import RecordingWriter, topics
from seedcam.types import Box, Detection, LaneState, LaneStatus, Result, TextLine

__all__ = ["BOOT_ID", "GAP_S", "wire_results", "write_recording"]

BOOT_ID = "rec0b007"
GAP_S = 0.02  #: the recorded inter-arrival time of the results
_EPOCH_NS = 1_700_000_000 * 10**9


def _result(frame_id: int) -> Result:
    lane = LaneState(LaneStatus.OK if frame_id % 7 else LaneStatus.ONE_LINE, 0.01 * (frame_id % 5) - 0.02,
                     0.003 * frame_id % 0.1, 0.15, 0.9, 0.8, 0.7, 0.45, 0.3)  # fmt: skip
    detections = (Detection(3, "stop", 0.5 + 0.01 * (frame_id % 40), Box(0.1, 0.2, 0.3, 0.45)),) if frame_id % 3 else ()
    text = (TextLine("AGV-042", 0.91, (0.9,) * 7, Box(0.5, 0.5, 0.7, 0.6)),) if frame_id % 4 == 0 else ()
    return Result(
        frame_id=frame_id,
        capture_timestamp_us=5_000_000 + frame_id * 20_000,
        model_ids=("lane-int8@1.0.0", "detect-int8@1.0.0"),
        lane=lane,
        detections=detections,
        text_lines=text,
        frame_width=320,
        frame_height=240,
    )


def wire_results(count: int, first: int = 100) -> list[Result]:
    """``count`` results as a host decodes them from the wire (compact layout: rounded)."""
    encoder, decoder = CompactEncoder(), CompactDecoder()
    out = []
    for frame_id in range(first, first + count):
        result = _result(frame_id)
        fresh, payload = encoder.encode(result, result.capture_timestamp_us + 2500)
        if fresh is not None:
            decoder.set_dictionary(fresh)
        out.append(decoder.decode(payload))
    return out


def device_info() -> pb.DeviceInfo:
    info = pb.DeviceInfo(protocol_version=2, firmware_version="0.1.0", boot_id=BOOT_ID, serial_number="SC-REC-1",
                         max_frame_size=65536, board="emulated-linux", camera="synthetic", frame_width=320,
                         frame_height=240)  # fmt: skip
    info.models.add(id="lane-int8@1.0.0", name="lane", version="1.0.0", task="lane", precision="int8", active=True)
    info.result_dictionary.reference_forward_m = 0.3
    info.result_dictionary.timings = "summary"
    return info


def write_recording(path: Path, results: list[Result], *, finish: bool = True, **writer_options: object) -> Path:
    """A recording of ``results`` arriving every :data:`GAP_S` s, with a health report every 10 and a log."""
    writer = RecordingWriter(path, **writer_options)  # type: ignore[arg-type]
    writer.write(topics.DEVICE_INFO, device_info(), _EPOCH_NS, 0)
    for i, result in enumerate(results):
        at = _EPOCH_NS + round((i + 1) * GAP_S * 1e9)
        writer.write(topics.RESULT, codec.result_to_pb(result), at, result.capture_timestamp_us * 1000)
        if i % 10 == 0:
            health = pb.Health(boot_id=BOOT_ID, fps=50.0, timestamp_us=result.capture_timestamp_us + 10,
                               latest_frame_id=result.frame_id, frames_processed=i + 1)  # fmt: skip
            writer.write(topics.HEALTH, health, at + 1000, health.timestamp_us * 1000)
        if i == 5:
            log = pb.LogRecord(level=30, logger="seedcam_firmware.camera", message="camera hiccup")
            writer.write(topics.LOG, log, at + 2000, 0)
    if finish:
        writer.close()
    else:
        writer.flush()
    return path
