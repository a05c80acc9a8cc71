"""Recording files: MCAP with protobuf schemas, readable by the mcap package, and readable after a crash."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcap.reader import make_reader
from recording_fixtures import wire_results, write_recording

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import RecordingError
from seedcam.protocol import codec
from seedcam.recording import RecordingReader, RecordingWriter, topics
from seedcam.types import Result

REPO = Path(__file__).resolve().parents[2]


def assert_same(recorded: list[Result], sent: list[Result]) -> None:
    """Equal but for float32 storage (the Result message's floats) and the arrival time."""
    assert [r.frame_id for r in recorded] == [r.frame_id for r in sent]
    for a, b in zip(recorded, sent, strict=True):
        assert a.capture_timestamp_us == b.capture_timestamp_us and a.model_ids == b.model_ids
        assert a.lane is not None and b.lane is not None and a.lane.status is b.lane.status
        assert math.isclose(a.lane.offset_m, b.lane.offset_m, rel_tol=1e-6, abs_tol=1e-7)
        assert [d.label for d in a.detections] == [d.label for d in b.detections]
        assert all(
            math.isclose(x.score, y.score, rel_tol=1e-6) for x, y in zip(a.detections, b.detections, strict=True)
        )
        assert [t.text for t in a.text_lines] == [t.text for t in b.text_lines]
        assert a.timings_us == b.timings_us


def test_a_recording_holds_every_topic_with_protobuf_schemas_in_zstd_chunks_and_a_summary(tmp_path: Path) -> None:
    sent = wire_results(60)
    path = write_recording(tmp_path / "run.mcap", sent)
    with path.open("rb") as stream:  # the mcap package's own (seeking, indexed) reader: what Foxglove relies on
        reader = make_reader(stream)
        summary = reader.get_summary()
        assert summary is not None and summary.statistics is not None
        assert reader.get_header().profile == "seedcam"
        schemas = {s.name: s.encoding for s in summary.schemas.values()}
        assert schemas == {
            "seedcam.v1.DeviceInfo": "protobuf",
            "seedcam.v1.Result": "protobuf",
            "seedcam.v1.Health": "protobuf",
            "seedcam.v1.LogRecord": "protobuf",
        }
        assert {c.message_encoding for c in summary.channels.values()} == {"protobuf"}
        assert {c.compression for c in summary.chunk_indexes} == {"zstd"}
        counts = {summary.channels[i].topic: n for i, n in summary.statistics.channel_message_counts.items()}
        assert counts == {topics.DEVICE_INFO: 1, topics.RESULT: 60, topics.HEALTH: 6, topics.LOG: 1}
    ours = RecordingReader(path)
    assert_same(ours.results(), sent)
    assert not ours.truncated and ours.profile == "seedcam"
    info = ours.device_info()
    assert info is not None and info.boot_id == "rec0b007"
    assert [h.frames_processed for h in ours.health()] == [1, 11, 21, 31, 41, 51]
    logs = [m.message for m in ours.messages([topics.LOG])]
    assert len(logs) == 1 and logs[0].message == "camera hiccup"  # type: ignore[union-attr]


def test_a_file_cut_anywhere_yields_exactly_the_results_of_its_complete_chunks(tmp_path: Path) -> None:
    sent = wire_results(40)
    path = tmp_path / "whole.mcap"
    writer = RecordingWriter(path, flush_interval_s=3600.0, fsync=False)
    writer.write(topics.DEVICE_INFO, pb.DeviceInfo(boot_id="b"), 1, 0)
    for i, result in enumerate(sent):
        writer.write(topics.RESULT, codec.result_to_pb(result), 10 + i, 0)
        if i % 10 == 9:
            writer.flush()  # a chunk of 10 results (the first also holds the device info)
    writer.close()
    data = path.read_bytes()
    with path.open("rb") as stream:
        summary = make_reader(stream).get_summary()
    assert summary is not None
    chunks = sorted(summary.chunk_indexes, key=lambda c: c.chunk_start_offset)
    ends = [(c.chunk_start_offset + c.chunk_length, 10 * (k + 1)) for k, c in enumerate(chunks)]  # (end byte, results)
    assert len(ends) == 4
    first_chunk = ends[0][0]
    for cut in sorted({first_chunk - 1, first_chunk, first_chunk + 7, ends[1][0] + 3, ends[2][0] - 20, len(data) - 9}):
        piece = tmp_path / f"cut{cut}.mcap"
        piece.write_bytes(data[:cut])
        reader = RecordingReader(piece)
        got = reader.results()
        expected = max([n for size, n in ends if size <= cut], default=0)
        if cut < len(data) - 9:
            assert len(got) == expected, (cut, reader.truncation)
        assert [r.frame_id for r in got] == [r.frame_id for r in sent[: len(got)]]
        assert reader.truncated and reader.truncation, cut
    garbage = tmp_path / "garbage.mcap"  # a tail of junk after the second chunk: the first two chunks survive
    garbage.write_bytes(data[: ends[1][0]] + b"\x05" + bytes(range(200)) * 3)
    reader = RecordingReader(garbage)
    assert len(reader.results()) == 20 and reader.truncated


def test_what_is_not_a_recording_is_a_clear_error(tmp_path: Path) -> None:
    not_mcap = tmp_path / "notes.mcap"
    not_mcap.write_text("hello, I am not MCAP\n")
    with pytest.raises(RecordingError, match="not an MCAP recording"):
        RecordingReader(not_mcap).results()
    with pytest.raises(RecordingError, match="no recording at"):
        RecordingReader(tmp_path / "missing.mcap")
    with pytest.raises(RecordingError, match="cannot create"):
        RecordingWriter(tmp_path / "no-such-dir" / "run.mcap")


_FULL_DISK = """
import resource, signal, sys
sys.path.insert(0, {tests!r})
from recording_fixtures import wire_results
from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import RecordingError
from seedcam.protocol import codec
from seedcam.recording import RecordingWriter, topics

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))
writer = RecordingWriter({path!r}, flush_interval_s=3600.0)
results = wire_results(2000)
try:
    for i, result in enumerate(results):
        writer.write(topics.RESULT, codec.result_to_pb(result), 10 + i, 0)
        if i % 10 == 9:
            writer.flush()
            print(writer.on_disk.get(topics.RESULT, 0), flush=True)
except RecordingError as exc:
    print("error:", exc, flush=True)
    writer.close()
"""


def test_a_full_disk_stops_the_writer_with_a_clear_error_and_the_file_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / "full.mcap"
    script = _FULL_DISK.format(tests=str(REPO / "tests" / "sdk"), path=str(path))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=60)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stderr
    assert lines[-1].startswith("error: cannot write") and "too large" in lines[-1].lower(), lines[-1]
    on_disk = int(lines[-2])
    assert on_disk >= 10
    reader = RecordingReader(path)
    got = reader.results()
    assert len(got) == on_disk and reader.truncated
