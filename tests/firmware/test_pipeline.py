"""The capture → inference → send pipeline with a fake camera, and the TaskRunner."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import pytest
from helpers import wait_until

from seedcam.types import Box, Detection, LaneState, LaneStatus, ModelInfo, Result
from seedcam_firmware import pipeline as pipeline_module
from seedcam_firmware.camera.base import CameraSource, Frame
from seedcam_firmware.errors import CameraError, ConfigError
from seedcam_firmware.pipeline import Pipeline
from seedcam_firmware.tasks.base import NO_PRIOR, Task, TaskOutput
from seedcam_firmware.tasks.runner import TaskRunner

WAIT_S = 5.0
W, H = 16, 12


class FakeCamera(CameraSource):
    """Tiny frames every ``period_s``; optional CameraErrors first, optional end after ``frames``.

    After the last frame, ``read`` blocks (until closed or its timeout), like a stalled camera.
    """

    def __init__(self, *, frames: int | None = None, errors: int = 0, period_s: float = 0.002) -> None:
        self.size = (W, H)
        self._frames = frames
        self._errors_left = errors
        self._period_s = period_s
        self._closed = threading.Event()
        self._image = np.zeros((H, W, 3), np.uint8)
        self.next_id = 0
        self.timestamps: dict[int, int] = {}
        self._running = threading.Event()
        self._running.set()
        self.holding = threading.Event()

    def hold(self) -> None:
        """Stop producing frames; :attr:`holding` is set once a read waits."""
        self._running.clear()

    @property
    def latest_id(self) -> int:
        return self.next_id - 1

    def read(self, timeout: float) -> Frame:
        if self._closed.is_set():
            raise CameraError("closed")
        if self._errors_left > 0:
            self._errors_left -= 1
            raise CameraError("sensor glitch")
        if self._frames is not None and self.next_id >= self._frames:
            self._closed.wait(timeout)
            raise CameraError("no frame")
        if not self._running.is_set():
            self.holding.set()
            self._closed.wait(timeout)
            raise CameraError("no frame")
        if self._closed.wait(self._period_s):  # the frame interval
            raise CameraError("closed")
        frame = Frame(self.next_id, time.monotonic_ns() // 1000, self._image)
        self.timestamps[frame.frame_id] = frame.timestamp_us
        self.next_id += 1
        return frame

    def close(self) -> None:
        self._closed.set()


class Collector:
    """A sink that records results and lets the test wait for a count."""

    def __init__(self) -> None:
        self.results: list[Result] = []
        self._cond = threading.Condition()

    def __call__(self, result: Result) -> None:
        with self._cond:
            self.results.append(result)
            self._cond.notify_all()

    def wait_for(self, count: int, timeout: float = WAIT_S) -> list[Result]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.results) >= count, timeout):
                pytest.fail(f"only {len(self.results)} of {count} results within {timeout} s")
            return list(self.results)


@pytest.fixture
def run_pipeline() -> Iterator[Callable[..., Pipeline]]:
    """Start pipelines; each is stopped (camera closed first) at teardown."""
    started: list[tuple[Pipeline, CameraSource]] = []

    def start(
        camera: CameraSource, process: Callable[[Frame], Result], sink: Callable[[Result], None], **kw: int
    ) -> Pipeline:
        pipe = Pipeline(camera, process, sink, **kw)
        started.append((pipe, camera))
        pipe.start()
        return pipe

    yield start
    for pipe, camera in started:
        camera.close()
        pipe.stop(timeout=WAIT_S)


# ---- pipeline -----------------------------------------------------------------


def test_every_processed_frame_gives_an_empty_result_without_tasks(run_pipeline: Callable[..., Pipeline]) -> None:
    camera = FakeCamera(frames=20)
    sink = Collector()
    runner = TaskRunner([], [])
    pipe = run_pipeline(camera, runner.process, sink, queue_depth=64)

    results = sink.wait_for(20)
    assert [r.frame_id for r in results] == list(range(20))
    for r in results:
        assert r.capture_timestamp_us == camera.timestamps[r.frame_id]
        assert (r.frame_width, r.frame_height) == (W, H)
        assert r.model_ids == ()
        assert r.lane is None and r.detections == () and r.text_lines == () and r.classifications == ()
        assert set(r.timings_us) == {"capture_to_result"}
        assert 0 <= r.timings_us["capture_to_result"] < WAIT_S * 1e6
    wait_until(lambda: pipe.stats.frames_processed == 20, what="processed count")
    stats = pipe.stats
    assert stats.frames_captured == 20
    assert stats.frames_dropped == 0
    assert stats.fps > 0
    assert pipe.latest_frame is not None and pipe.latest_frame.frame_id == 19


def test_slow_sink_drops_old_frames_but_newest_get_through(run_pipeline: Callable[..., Pipeline]) -> None:
    """The sink is held while the camera runs far ahead: the backlog is dropped, the newest frame gets out."""
    camera = FakeCamera(period_s=0.001)
    entered: queue.Queue[Result] = queue.Queue()
    release = threading.Semaphore(0)

    def slow_sink(result: Result) -> None:
        entered.put(result)
        release.acquire(timeout=WAIT_S)

    depth = 2
    pipe = run_pipeline(camera, TaskRunner([], []).process, slow_sink, queue_depth=depth)
    first = entered.get(timeout=WAIT_S)
    wait_until(lambda: camera.latest_id >= first.frame_id + 40, what="camera to run ahead")
    camera.hold()
    assert camera.holding.wait(WAIT_S)
    latest = camera.latest_id

    sent = [first]
    while sent[-1].frame_id != latest:
        # at most depth frames queued + 1 in inference + depth results queued + 1 just read
        assert len(sent) <= 2 * depth + 3, f"sink saw a backlog: {[r.frame_id for r in sent]}"
        release.release()
        sent.append(entered.get(timeout=WAIT_S))
    ids = [r.frame_id for r in sent]
    assert ids == sorted(set(ids))
    release.release()

    # every captured frame was either sent or counted as dropped
    wait_until(
        lambda: pipe.stats.frames_processed + pipe.stats.frames_dropped == pipe.stats.frames_captured,
        what="all frames accounted for",
    )
    stats = pipe.stats
    assert stats.frames_captured == latest + 1
    assert stats.frames_processed == len(sent)
    assert stats.frames_dropped == latest + 1 - len(sent) >= 40 - (2 * depth + 2)


def test_a_failing_frame_is_counted_and_the_next_frames_flow(run_pipeline: Callable[..., Pipeline]) -> None:
    runner = TaskRunner([], [])

    def process(frame: Frame) -> Result:
        if frame.frame_id == 3:
            raise RuntimeError("model exploded")
        return runner.process(frame)

    sink = Collector()
    pipe = run_pipeline(FakeCamera(frames=8), process, sink, queue_depth=64)
    results = sink.wait_for(7)
    assert [r.frame_id for r in results] == [0, 1, 2, 4, 5, 6, 7]
    wait_until(lambda: pipe.stats.frames_processed == 7, what="processed count")
    assert pipe.stats.frames_dropped == 1


def test_a_failing_sink_is_counted_and_the_next_results_flow(run_pipeline: Callable[..., Pipeline]) -> None:
    sink = Collector()

    def flaky_sink(result: Result) -> None:
        if result.frame_id == 2:
            raise OSError("link hiccup")
        sink(result)

    pipe = run_pipeline(FakeCamera(frames=6), TaskRunner([], []).process, flaky_sink, queue_depth=64)
    assert [r.frame_id for r in sink.wait_for(5)] == [0, 1, 3, 4, 5]
    wait_until(lambda: pipe.stats.frames_processed == 5, what="processed count")
    assert pipe.stats.frames_dropped == 1


def test_camera_errors_are_retried_and_counted(
    run_pipeline: Callable[..., Pipeline], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline_module, "_CAMERA_RETRY_S", 0.01)
    monkeypatch.setattr(pipeline_module, "_CAMERA_TIMEOUT_S", 60.0)  # the stalled end must not add errors
    sink = Collector()
    pipe = run_pipeline(FakeCamera(frames=4, errors=3), TaskRunner([], []).process, sink, queue_depth=64)
    assert [r.frame_id for r in sink.wait_for(4)] == [0, 1, 2, 3]
    stats = pipe.stats
    assert stats.camera_errors == 3
    assert stats.frames_captured == 4


def test_stop_returns_within_its_timeout_even_with_a_stalled_camera(run_pipeline: Callable[..., Pipeline]) -> None:
    camera = FakeCamera(frames=2)  # then read blocks for its whole timeout (2 s)
    sink = Collector()
    pipe = run_pipeline(camera, TaskRunner([], []).process, sink)
    sink.wait_for(2)
    start = time.monotonic()
    pipe.stop(timeout=0.3)
    assert time.monotonic() - start < 1.0


def test_stop_ends_all_stages_of_a_running_pipeline(run_pipeline: Callable[..., Pipeline]) -> None:
    before = set(threading.enumerate())
    sink = Collector()
    pipe = run_pipeline(FakeCamera(), TaskRunner([], []).process, sink)
    sink.wait_for(3)
    ours = [t for t in threading.enumerate() if t not in before]
    assert len(ours) == 3
    start = time.monotonic()
    pipe.stop(timeout=3.0)
    assert time.monotonic() - start < 3.5
    assert not any(t.is_alive() for t in ours)
    count = len(sink.results)
    pipe.stop(timeout=1.0)  # idempotent
    assert len(sink.results) == count


# ---- TaskRunner -----------------------------------------------------------------


class FakeTask(Task):
    def __init__(self, name: str, output: TaskOutput) -> None:
        self.name = name
        self.model = ModelInfo(f"{name}-int8@1.0", name, "1.0", name, "int8")
        self.output = output
        self.images: list[np.ndarray] = []
        self.closed = False

    def run(self, image: np.ndarray, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        self.images.append(image)
        return self.output

    def close(self) -> None:
        self.closed = True


def _det(label: str) -> Detection:
    return Detection(0, label, 0.9, Box(0.1, 0.1, 0.5, 0.5))


LANE = LaneState(LaneStatus.OK, 0.01, 0.02, 0.1, 0.9, 0.8, 0.7, 0.45)


def _tasks() -> tuple[FakeTask, FakeTask]:
    a = FakeTask("a", TaskOutput(detections=(_det("a1"),), timings_us={"a:invoke": 5}))
    b = FakeTask("b", TaskOutput(lane=LANE, detections=(_det("b1"), _det("b2")), timings_us={"b:invoke": 7}))
    return a, b


def _frame() -> Frame:
    return Frame(41, time.monotonic_ns() // 1000, np.zeros((H, W, 3), np.uint8))


def test_select_unknown_task_names_it_and_keeps_the_selection() -> None:
    runner = TaskRunner(_tasks(), ["a"])
    with pytest.raises(ConfigError, match="nope"):
        runner.select(["a", "nope"])
    assert runner.enabled == ("a",)
    with pytest.raises(ConfigError, match="nope"):
        TaskRunner(_tasks(), ["nope"])


def test_select_keeps_order_and_removes_duplicates() -> None:
    runner = TaskRunner(_tasks(), [])
    assert runner.available == ("a", "b")
    assert runner.select(["b", "a", "b"]) == ("b", "a")
    assert runner.enabled == ("b", "a")


def test_models_mark_enabled_tasks_active() -> None:
    runner = TaskRunner(_tasks(), ["b"])
    assert {m.id: m.active for m in runner.models} == {"a-int8@1.0": False, "b-int8@1.0": True}
    runner.select([])
    assert not any(m.active for m in runner.models)


def test_outputs_of_enabled_tasks_are_merged_in_order() -> None:
    a, b = _tasks()
    runner = TaskRunner([a, b], ["b", "a"])
    frame = _frame()
    result = runner.process(frame)
    assert result.frame_id == 41
    assert result.capture_timestamp_us == frame.timestamp_us
    assert result.model_ids == ("b-int8@1.0", "a-int8@1.0")
    assert [d.label for d in result.detections] == ["b1", "b2", "a1"]
    assert result.lane == LANE
    assert set(result.timings_us) == {"task:a", "task:b", "a:invoke", "b:invoke", "capture_to_result"}
    assert result.timings_us["a:invoke"] == 5 and result.timings_us["b:invoke"] == 7
    assert (result.frame_width, result.frame_height) == (W, H)
    assert a.images[0] is frame.image and b.images[0] is frame.image


def test_the_cameras_stages_join_the_timings_and_latency_counts_from_the_capture_stamp() -> None:
    a, _ = _tasks()
    runner = TaskRunner([a], ["a"])
    stamp_us = time.monotonic_ns() // 1000
    frame = Frame(41, stamp_us, np.zeros((H, W, 3), np.uint8), timings_us={"camera:render": 9_000_000})
    result = runner.process(frame)
    done_us = time.monotonic_ns() // 1000
    assert result.timings_us["camera:render"] == 9_000_000
    assert set(result.timings_us) == {"camera:render", "task:a", "a:invoke", "capture_to_result"}
    assert 0 <= result.timings_us["capture_to_result"] <= done_us - stamp_us  # the render is not in it
    assert result.capture_timestamp_us == stamp_us


def test_disabled_tasks_do_not_run_and_close_closes_all() -> None:
    a, b = _tasks()
    runner = TaskRunner([a, b], ["a"])
    result = runner.process(_frame())
    assert result.model_ids == ("a-int8@1.0",)
    assert result.lane is None
    assert b.images == []
    runner.close()
    assert a.closed and b.closed
