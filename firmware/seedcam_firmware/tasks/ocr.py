"""The OCR task, two-stage: plates found by the detector → rectified crops → CTC text model.

For each detection of the frame whose label is in ``ocr.plate_labels`` and whose score
reaches ``ocr.plate_min_score`` (the ``ocr.max_plates`` best scores), the plate is cut out of
the full-resolution
frame and rectified by :func:`~seedcam_firmware.inference.plate.crop_plate` at
the OCR model's input size (with ``ocr.views = 2``, not the default, the box is also
cut out as it is, :func:`~seedcam_firmware.inference.plate.crop_box`, both crops are
read and the more confident reading is kept), passed through the manifest's InputSpec
(``crop_resize``: channel order, as the training crops were made), read by the
OCR model and CTC-decoded: best path by default, beam search
when ``ocr.beam_width`` > 1, and a beam at least 8 wide restricted to
``ocr.pattern`` or ``ocr.lexicon`` when one is set. A reading less confident
than ``ocr.min_confidence`` (or empty) is dropped; each kept one becomes a
:class:`~seedcam.types.TextLine` carrying the plate's box in the frame. A bundle
may calibrate its confidences (manifest ``decoder.confidence_calibration``: then a
confidence is the probability, measured on held-out crops, that the reading is
right) and name the narrowest plate it can read (``decoder.min_plate_width_px``):
narrower plates are not read at all.

``ocr.plate_min_score`` (0.3) sits under ``detect.score_threshold`` (0.5): the detector hands
over plates it scores in between as candidates, which are read but not reported as
detections. The reading's calibrated confidence then decides, so a plate the detector is
unsure of still gets its text when the reader is sure; on held-out frames of our randomized
world this read 56 % of plates end to end instead of 48 %, with no text on anything that is
not a plate.

The task ``requires`` the detect task: when detect is enabled, the runner runs
it first and the OCR task reads its detections. When ocr is enabled without
detect, the OCR task runs the detector itself (same model, same ``[detect]``
thresholds) but reports only the text lines, not the detections; the
detector's model id is still listed in the Result's ``model_ids``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

import cv2
import numpy as np

from seedcam.types import Detection, TextLine
from seedcam_firmware.config import FirmwareConfig
from seedcam_firmware.errors import ConfigError, ModelError
from seedcam_firmware.inference.ctc import TextConstraint, TextReading, beam_decode, greedy_decode
from seedcam_firmware.inference.manifest import ModelManifest
from seedcam_firmware.inference.plate import crop_box, crop_plate
from seedcam_firmware.inference.prepared import PreparedFrame
from seedcam_firmware.inference.preprocess import crop_resize
from seedcam_firmware.inference.validate import ctc_layout
from seedcam_firmware.task_sections import OcrConfig
from seedcam_firmware.tasks.base import NO_PRIOR, ModelTask, Task, TaskOutput, elapsed_us, load_task_manifest
from seedcam_firmware.tasks.detect import DetectTask

__all__ = ["CONSTRAINED_MIN_BEAM", "OcrSettings", "OcrTask", "PlateReading", "load_ocr_task"]

log = logging.getLogger(__name__)

#: a pattern or lexicon is searched with a beam at least this wide
CONSTRAINED_MIN_BEAM = 8


#: the margin (fraction of the box's size on each side) of the rectified view's box when no plate
#: is found in it, and of the second view, the box as it is
RECTIFIED_MARGIN = 0.0
BOX_MARGIN = 0.1


@dataclass(frozen=True)
class PlateReading:
    """The reading of one plate: the kept view's reading and the time all its views took by stage, in µs."""

    reading: TextReading
    crop_us: int
    invoke_us: int
    decode_us: int


@dataclass(frozen=True)
class OcrSettings:
    """The OCR task's live settings (from the ``[ocr]`` config section)."""

    plate_labels: frozenset[str] = frozenset({"plate"})
    max_plates: int = 4
    min_confidence: float = 0.5
    plate_min_score: float = 0.3
    beam_width: int = 1
    views: int = 1
    constraint: TextConstraint | None = None


class OcrTask(ModelTask):
    """Reads the text of detected plates.

    Args:
        manifest: the OCR bundle: decoder ``{"type": "ctc", "alphabet", "blank_index"}``,
            output ``[1, T, K]`` with ``K = len(alphabet) + 1``.
        detector: the detect task, run by this task when detect itself is not enabled;
            None: only detections handed over by the runner are read.
        num_threads, delegate: interpreter settings.

    Raises (constructor):
        ModelError: the model file is not TFLite or disagrees with its manifest.
        BundleError: the decoder section disagrees with the output.
    """

    name = "ocr"
    requires = ("detect",)

    def __init__(
        self,
        manifest: ModelManifest,
        *,
        detector: DetectTask | None = None,
        num_threads: int = 2,
        delegate: str | None = None,
    ) -> None:
        super().__init__(manifest, num_threads=num_threads, delegate=delegate)
        self.layout = ctc_layout(manifest)
        self._detector = detector
        self.settings = OcrSettings()
        self._applied: OcrConfig | None = None
        self._ask_for_plates(self.settings)

    def _ask_for_plates(self, settings: OcrSettings) -> None:
        """Have the detector hand over plates from ``plate_min_score`` up, also under its own threshold."""
        if self._detector is not None:
            self._detector.request_candidates(settings.plate_labels, settings.plate_min_score)

    def configure(self, config: FirmwareConfig) -> None:
        """Take the ``[ocr]`` keys (next frame on).

        Raises:
            ConfigError: ``ocr.pattern`` does not compile, a lexicon word has characters
                outside the model's alphabet, or both pattern and lexicon are set.
        """
        section = config.section(OcrConfig)
        if section == self._applied:
            return
        self.settings = self.settings_for(section)
        self._applied = section
        self._ask_for_plates(self.settings)

    def settings_for(self, section: OcrConfig) -> OcrSettings:
        """Check an ``[ocr]`` section against this model and build its settings.

        Raises:
            ConfigError: see :meth:`configure`.
        """
        alphabet = self.layout.alphabet
        constraint = None
        if section.pattern and section.lexicon:
            raise ConfigError("ocr.pattern and ocr.lexicon are exclusive: set one of them, not both")
        if section.pattern:
            try:
                constraint = TextConstraint.from_pattern(section.pattern)
            except ValueError as exc:
                raise ConfigError(f"ocr.pattern {section.pattern!r} is not a valid regular expression: {exc}") from exc
        elif section.lexicon:
            for word in section.lexicon:
                if not word:
                    raise ConfigError("ocr.lexicon must not hold an empty word")
                outside = sorted({c for c in word if c not in alphabet})
                if outside:
                    raise ConfigError(
                        f"ocr.lexicon word {word!r} cannot be read: characters {outside} are not in the OCR "
                        f"model's alphabet {alphabet!r}"
                    )
            constraint = TextConstraint.from_lexicon(section.lexicon)
        return OcrSettings(
            plate_labels=frozenset(section.plate_labels),
            max_plates=section.max_plates,
            min_confidence=section.min_confidence,
            plate_min_score=section.plate_min_score,
            beam_width=section.beam_width,
            views=section.views,
            constraint=constraint,
        )

    def run_prepared(self, frame: PreparedFrame, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        """Read the plates of this frame.

        Args:
            frame: the frame (the detector run here shares its input with the frame's other tasks).
            prior: the outputs of the tasks run before in this frame; with a
                ``"detect"`` entry its detections are read, else the detector runs here.

        Raises:
            ModelError: no detections were handed over and there is no detector to run.
        """
        timings: dict[str, int] = {}
        extra_models: tuple[str, ...] = ()
        if "detect" in prior:
            detections = prior["detect"].detections + prior["detect"].candidates
        elif self._detector is not None:
            start = time.perf_counter()
            found, candidates, _ = self._detector.detect(frame)
            detections = found + candidates
            timings["ocr:detect"] = elapsed_us(start)
            extra_models = (self._detector.model.id,)
        else:
            raise ModelError("the ocr task has no detections to read and no detector to run")
        lines, read_timings = self.read(frame.image, detections)
        timings.update(read_timings)
        return TaskOutput(text_lines=lines, timings_us=timings, model_ids=extra_models)

    def read(self, image: np.ndarray, detections: tuple[Detection, ...]) -> tuple[tuple[TextLine, ...], dict[str, int]]:
        """Text lines of the plate detections in ``image`` scoring ``plate_min_score`` or more, and the stage
        timings (summed over plates)."""
        settings = self.settings
        plates = sorted(
            (d for d in detections if d.label in settings.plate_labels and d.score >= settings.plate_min_score),
            key=lambda d: d.score,
            reverse=True,
        )[: settings.max_plates]
        crop_us = invoke_us = decode_us = 0
        lines: list[TextLine] = []
        frame_w = image.shape[1] if image.ndim >= 2 else 0
        min_width = self.layout.min_plate_width_px
        plates = [d for d in plates if (d.box.x_max - d.box.x_min) * frame_w >= min_width]  # else too small to read
        bgr = image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8  # else crop_plate says why
        gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if plates and bgr else None  # once per frame, not per plate
        for det in plates:
            box = det.box
            try:
                read = self.read_plate(image, (box.x_min, box.y_min, box.x_max, box.y_max), settings, frame_gray=gray)
            except ValueError as exc:  # an empty box handed over by another task
                log.debug("skipped plate %s: %s", box, exc)
                continue
            crop_us += read.crop_us
            invoke_us += read.invoke_us
            decode_us += read.decode_us
            reading = read.reading
            confidence = (
                reading.confidence if self.layout.calibration is None else self.layout.calibration(reading.confidence)
            )
            if reading.text and confidence >= settings.min_confidence:
                lines.append(TextLine(reading.text, confidence, reading.char_confidences, det.box))
        timings = {"ocr:crop": crop_us, "ocr:invoke": invoke_us, "ocr:decode": decode_us} if plates else {}
        return tuple(lines), timings

    def read_plate(
        self,
        image: np.ndarray,
        box: tuple[float, float, float, float],
        settings: OcrSettings | None = None,
        *,
        frame_gray: np.ndarray | None = None,
    ) -> PlateReading:
        """The reading of the plate in the normalised ``box`` of ``image``, confidence not calibrated.

        Reads ``settings.views`` crops (the plate rectified; then the box as it is) and keeps the
        most confident reading (the first of equals).

        Raises:
            ValueError: not an H x W x 3 uint8 image, or a box without area.
        """
        settings = settings or self.settings
        spec = self.manifest.input
        crop_us = invoke_us = decode_us = 0
        best: TextReading | None = None
        for view in range(max(settings.views, 1)):
            start = time.perf_counter()
            if view == 0:
                crop = crop_plate(image, box, spec.width, spec.height, margin=RECTIFIED_MARGIN, frame_gray=frame_gray)
            else:
                crop = crop_box(image, box, spec.width, spec.height, margin=BOX_MARGIN)
            tensor = self.input_tensor(crop_resize(crop, spec))  # as the training crops were made
            crop_us += elapsed_us(start)
            start = time.perf_counter()
            probs = self._model.invoke(tensor, (self.layout.output,))[self.layout.output]
            invoke_us += elapsed_us(start)
            start = time.perf_counter()
            reading = self._decode(probs, settings)
            decode_us += elapsed_us(start)
            if best is None or reading.confidence > best.confidence:
                best = reading
        assert best is not None  # at least one view was read
        return PlateReading(best, crop_us, invoke_us, decode_us)

    def _decode(self, probs: np.ndarray, settings: OcrSettings) -> TextReading:
        layout = self.layout
        if settings.constraint is None and settings.beam_width <= 1:
            return greedy_decode(probs, layout.alphabet, layout.blank_index)
        width = settings.beam_width if settings.constraint is None else max(settings.beam_width, CONSTRAINED_MIN_BEAM)
        return beam_decode(probs, layout.alphabet, layout.blank_index, beam_width=width, constraint=settings.constraint)


def load_ocr_task(config: FirmwareConfig, loaded: Mapping[str, Task] | None = None) -> OcrTask:
    """Load the OCR bundle named by ``models.ocr`` at ``models.ocr_precision``.

    Args:
        config: the firmware configuration (also the initial ``[ocr]`` settings).
        loaded: tasks loaded before this one; its ``"detect"`` task finds the plates.

    Raises:
        ModelError: the detect task did not load (the OCR task has no plates to read),
            or the OCR model does not load or disagrees with its manifest.
        BundleError: the manifest is missing or invalid, the file's sha256 differs,
            the bundle is not an OCR model, or its decoder disagrees with its output.
        ConfigError: an ``[ocr]`` value this model cannot use.
    """
    detector = (loaded or {}).get("detect")
    if not isinstance(detector, DetectTask):
        raise ModelError("the ocr task reads the plates the detect task finds, and the detect model did not load")
    manifest = load_task_manifest(config, "ocr")
    task = OcrTask(
        manifest, detector=detector, num_threads=config.runtime.num_threads, delegate=config.runtime.delegate or None
    )
    task.configure(config)
    return task
