"""Read and write "your own data" folders: detection (YOLO, COCO), plate OCR and lane.

Pure format code: readers validate the index files and image headers but never decode
pixels (:func:`load_image` does). Every problem is a :class:`DatasetFormatError` whose
message names the file, the line or entry, and what is wrong. All boxes in memory are
``(x0, y0, x1, y1)`` pixels of their image.

Detection, YOLO layout (:func:`read_detection_folder`, :func:`write_yolo_folder`)::

    DIR/data.yaml            names: [car, sign]   or   names: {0: car, 1: sign}  (optional nc:)
    DIR/images/<name>.png    also .jpg .jpeg .bmp
    DIR/labels/<name>.txt    one line per object: class cx cy w h [difficult]

``cx cy w h`` are normalised 0..1 to the image width/height; a 6th column ``1`` marks a
difficult object (ignored in scoring, VOC style; ``0`` or absent: not difficult; Ultralytics
itself does not know this column). Blank lines are fine; an image with no or an empty label
file has no objects. The Ultralytics split layout is read too: ``data.yaml`` keys
``train:``/``val:``/``test:`` name image folders (searched recursively) or ``.txt`` image
lists, relative to ``path:`` or to the yaml's folder; the label of ``.../images/.../a.jpg``
is ``.../labels/.../a.txt``. ``split=None`` reads ``val``, else ``test``, else ``images/``.

Detection, COCO (:func:`read_detection_folder`, :func:`write_coco_file`): ``DIR/annotations.json``
(or any ``.json`` path) with ``images`` (id, file_name, width, height), ``annotations``
(image_id, category_id, bbox ``[x, y, w, h]`` pixels, iscrowd 0/1: 1 = difficult) and
``categories`` (id, name; names are listed in order of id). Images are looked up relative to
the JSON's folder, then in its ``images/`` sub-folder.

Plate OCR (:func:`read_ocr_folder`, :func:`write_ocr_folder`): ``DIR/ocr.jsonl``, one object
per line ``{"image": "images/f1.png", "box": [x0, y0, x1, y1], "text": "ABC-123"}``; several
lines may name one image; text is printable ASCII.

Lane (:func:`read_lane_folder`, :func:`write_lane_folder`): ``DIR/lane.jsonl`` lines
``{"image", "offset_m", "heading_rad", "curvature_per_m", "status": "ok"|"one_line"|"lost"}``
and ``DIR/camera.json`` ``{"width", "height", "hfov_deg", "pitch_deg", "height_m"}``; every
frame must be camera-sized. :func:`check_camera` compares it with a bundle manifest's
``camera`` (sizes exact, angles 0.5 degrees, height 5 mm) and raises :class:`CameraMismatch`.

Safety: paths in ``ocr.jsonl``, ``lane.jsonl`` and COCO ``file_name`` must be relative without
``..``; every file read (also through ``data.yaml``, image lists and symbolic links) must lie
inside the dataset folder. Unknown extra keys in JSON are ignored.

Writers create the folder (and parents), write lossless PNG images and their index files
atomically (temporary file + ``os.replace``). They refuse a non-empty folder that is not the
same kind of dataset; into one that is (with the same names / camera) they add the items,
replacing any stem already there.
"""

from __future__ import annotations

from ._coco import write_coco_file
from ._common import DatasetFormatError
from ._detect import read_detection_folder
from ._images import load_image
from ._lane import (
    CameraInfo,
    CameraMismatch,
    LaneFolder,
    LaneItem,
    LaneTruthLike,
    check_camera,
    read_lane_folder,
    write_lane_folder,
)
from ._ocr import OcrItem, read_ocr_folder, write_ocr_folder
from ._records import DetectionFolder, DetectionItem, LabelledBox
from ._yolo import write_yolo_folder

__all__ = [
    "CameraInfo",
    "CameraMismatch",
    "DatasetFormatError",
    "DetectionFolder",
    "DetectionItem",
    "LabelledBox",
    "LaneFolder",
    "LaneItem",
    "LaneTruthLike",
    "OcrItem",
    "check_camera",
    "load_image",
    "read_detection_folder",
    "read_lane_folder",
    "read_ocr_folder",
    "write_coco_file",
    "write_lane_folder",
    "write_ocr_folder",
    "write_yolo_folder",
]
