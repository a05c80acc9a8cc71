"""Recordings of a sensor's stream: MCAP files with protobuf schemas, and their replay.

::

    import seedcam
    from seedcam.recording import Recorder, RecordingReader

    with seedcam.open("/dev/ttyACM0") as sensor, Recorder(sensor, "run.mcap"):
        ...  # everything the sensor sends meanwhile is recorded

    results = RecordingReader("run.mcap").results()
    with seedcam.open("replay://run.mcap?speed=2") as replay:  # the recording as a sensor
        ...

Needs ``seedcam[record]`` (``mcap``, ``mcap-protobuf-support``, ``foxglove-schemas-protobuf``).
The topics and their schemas are in :mod:`seedcam.recording.topics`; docs/record.md has the rest.
"""

from __future__ import annotations

from seedcam.recording.reader import RecordedMessage, RecordingReader
from seedcam.recording.recorder import Recorder, RecorderStats
from seedcam.recording.writer import RecordingWriter

__all__ = ["RecordedMessage", "Recorder", "RecorderStats", "RecordingReader", "RecordingWriter"]
