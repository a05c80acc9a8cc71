"""Records of detection datasets, shared by the YOLO and COCO modules."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ._common import DatasetFormatError, check_box


@dataclass(frozen=True)
class LabelledBox:
    """One labelled object.

    Attributes:
        label: class name (one of the dataset's names).
        box: ``(x0, y0, x1, y1)`` in pixels of the image.
        difficult: a difficult / crowd object, ignored in scoring.
    """

    label: str
    box: tuple[float, float, float, float]
    difficult: bool = False

    def __post_init__(self) -> None:
        box = tuple(float(v) for v in self.box)
        if len(box) != 4:
            raise ValueError(f"LabelledBox.box needs 4 numbers (x0, y0, x1, y1), got {self.box!r}")
        object.__setattr__(self, "box", box)
        object.__setattr__(self, "difficult", bool(self.difficult))


@dataclass(frozen=True)
class DetectionItem:
    """One image of a detection dataset and its objects (boxes in pixels)."""

    image: Path
    width: int
    height: int
    objects: tuple[LabelledBox, ...]


@dataclass(frozen=True)
class DetectionFolder:
    """A detection dataset: class names, items, and the format read (``"yolo"`` or ``"coco"``)."""

    names: tuple[str, ...]
    items: tuple[DetectionItem, ...]
    format: str


def checked_boxes(
    boxes: Iterable[object], names: Collection[str], width: int, height: int, *, where: str
) -> Iterator[LabelledBox]:
    """The boxes a writer was handed, each checked: a :class:`LabelledBox` of a known label inside its image.

    Raises:
        DatasetFormatError: naming the item and the box.
    """
    for j, b in enumerate(boxes):
        at = f"{where} box {j}"
        if not isinstance(b, LabelledBox):
            raise DatasetFormatError(f"{at}: expected a LabelledBox, got {type(b).__name__}")
        if b.label not in names:
            raise DatasetFormatError(f"{at}: label {b.label!r} is not one of {list(names)}")
        check_box(b.box, width, height, where=at)
        yield b
