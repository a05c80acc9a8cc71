"""``seedcam-tools report``: one row per bundle and precision, speed-ups from the measured medians."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from seedcam_tools.cli import main
from seedcam_tools.report import accuracy_text, build_report, find_bundles, render_markdown

REPO = Path(__file__).resolve().parents[2]
LANE = REPO / "models" / "lane"


@pytest.fixture
def models(tmp_path: Path) -> Path:
    """A models folder: a copy of the lane bundle, a second valid bundle, a broken one and a non-bundle."""
    root = tmp_path / "models"
    shutil.copytree(LANE, root / "lane")
    lane_metrics = json.loads((root / "lane" / "metrics.json").read_text())
    lane_metrics.pop("worlds", None)  # the accuracy-by-world table has a test of its own
    (root / "lane" / "metrics.json").write_text(json.dumps(lane_metrics))
    # a valid second bundle of another task: same network files, its own manifest and a summary metric
    fake = root / "zz_fake"
    shutil.copytree(LANE, fake)
    manifest = json.loads((fake / "manifest.json").read_text())
    manifest.update(id="fake-v1", task="detect")
    del manifest["files"]["float32"]  # an int8-only bundle: no speed-up to show
    (fake / "manifest.json").write_text(json.dumps(manifest))
    (fake / "metrics.json").write_text(json.dumps({"summary": {"metric": "mAP@0.5", "int8": 0.8125}}))
    broken = root / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text(json.dumps({**manifest, "id": "broken-v1"}))  # lists no model file here
    (root / "notes").mkdir()  # no manifest: not a bundle
    return root


def _table_rows(text: str) -> list[list[str]]:
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in rows]


def test_report_has_a_row_per_model_and_precision_and_lists_what_failed(models: Path) -> None:
    assert [p.name for p in find_bundles(models)] == ["broken", "lane", "zz_fake"]
    report = build_report(models, invokes=3, command="seedcam-tools report --invokes 3")
    assert [(m.id, [r.precision for r in m.rows]) for m in report.models] == [
        ("lane-v3", ["float32", "int8"]),
        ("fake-v1", ["int8"]),
    ]
    assert [name for name, _ in report.skipped] == ["broken"]
    text = render_markdown(report)
    rows = _table_rows(text)
    assert [r[:3] for r in rows] == [
        ["`lane-v3` (lane/)", "lane", "float32"],
        ["`lane-v3` (lane/)", "lane", "int8"],
        ["`fake-v1` (zz_fake/)", "detect", "int8"],
    ]
    assert rows[2][3] == "mAP@0.5 0.8125"
    shipped = json.loads((LANE / "metrics.json").read_text())["heldout"]["int8"]
    offset_mm, heading_deg = shipped["offset_mae_m"] * 1000, shipped["heading_mae_deg"]
    assert rows[1][3].startswith(f"offset MAE {offset_mm:.1f} mm, heading MAE {heading_deg:.2f}")
    assert rows[1][4] == "1.82 MB" and rows[0][4] == "7.07 MB"
    assert "- `broken/`:" in text and "seedcam-tools report --invokes 3" in text
    assert re.search(r"\*\*Machine\*\*: .+, \d+ logical cores", text)
    assert "ai-edge-litert" in text or "tflite-runtime" in text


def test_speedups_are_float_over_int8_medians_at_each_thread_count(models: Path) -> None:
    report = build_report(models, invokes=5)
    lane = next(m for m in report.models if m.id == "lane-v3")
    f32, i8 = lane.rows
    assert set(f32.latency_ms) == set(i8.latency_ms) == {1, 2}
    assert all(v > 0 for v in (*f32.latency_ms.values(), *i8.latency_ms.values()))
    assert f32.speedup == {}
    for n in (1, 2):
        assert i8.speedup[n] == pytest.approx(f32.latency_ms[n] / i8.latency_ms[n])
    row = _table_rows(render_markdown(report))[1]
    assert row[5] == f"{i8.latency_ms[1]:.3f} ms" and row[6] == f"{i8.latency_ms[2]:.3f} ms"
    assert row[7] == f"{i8.speedup[1]:.2f}× / {i8.speedup[2]:.2f}×"
    fake = next(m for m in report.models if m.id == "fake-v1")
    assert fake.rows[0].speedup == {}


def test_accuracy_text_prefers_the_summary_and_falls_back_to_lane_errors() -> None:
    assert accuracy_text({"summary": {"metric": "accuracy", "float32": 0.9912, "int8": 0.99}}, "int8") == (
        "accuracy 99.0 %"
    )
    lane = {"heldout": {"int8": {"offset_mae_m": 0.0042, "heading_mae_deg": 0.5}}}
    assert accuracy_text(lane, "int8") == "offset MAE 4.2 mm, heading MAE 0.50°"
    assert accuracy_text(lane, "float32") == "—"
    assert accuracy_text(None, "int8") == "—"


def test_cli_writes_the_report_and_an_empty_folder_is_fine(models: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "REPORT.md"
    assert main(["report", "--models", str(models), "--out", str(out), "--invokes", "2", "-q"]) == 0
    assert len(_table_rows(out.read_text())) == 3
    assert "2 model(s), 3 row(s), 1 not measured" in capsys.readouterr().out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", "--models", str(empty), "-q"]) == 0
    assert "(no bundles found)" in (empty / "REPORT.md").read_text()
    assert main(["report", "--models", str(tmp_path / "missing"), "-q"]) == 1


def test_latency_measured_elsewhere_comes_back_as_a_section_checked_against_the_bundles(
    models: Path, tmp_path: Path
) -> None:
    """``--json`` on one machine, ``models/latency/*.json`` on another: rows say whether they timed the shipped file."""
    from seedcam_tools.latency_reference import load_reference

    measured = tmp_path / "elsewhere.json"
    out = tmp_path / "REPORT.md"
    assert (
        main(["report", "--models", str(models), "--out", str(out), "--invokes", "2", "-q", "--json", str(measured)])
        == 0
    )
    ref = load_reference(measured)
    lane = next(m for m in ref.models if m.folder == "lane")
    assert [r.precision for r in lane.rows] == ["float32", "int8"]
    f32, i8 = lane.rows

    # the reference travels into models/latency/; then the lane bundle's int8 file is rebuilt
    (models / "latency").mkdir()
    data = json.loads(measured.read_text())
    data["models"][0]["rows"][1]["note"] = "an older build"
    (models / "latency" / "other-cpu.json").write_text(json.dumps(data))
    manifest = json.loads((models / "lane" / "manifest.json").read_text())
    manifest["files"]["int8"]["sha256"] = "0" * 64
    text = render_markdown(
        build_report(models, invokes=1), [load_reference(models / "latency" / "other-cpu.json")], models
    )
    section = text[text.index("## Measured on") :]
    lines = [line for line in section.splitlines() if line.startswith("| `lane-v3`")]
    assert "the shipped file" in lines[0] and "not the shipped file" not in lines[0]
    assert lines[1].endswith(
        f"{f32.latency_ms[1] / i8.latency_ms[1]:.2f}× / {f32.latency_ms[2] / i8.latency_ms[2]:.2f}× |"
    )
    (models / "lane" / "manifest.json").write_text(json.dumps(manifest))  # now the int8 file is not the one timed
    text = render_markdown(
        build_report(models, invokes=1), [load_reference(models / "latency" / "other-cpu.json")], models
    )
    lines = [line for line in text[text.index("## Measured on") :].splitlines() if line.startswith("| `lane-v3`")]
    assert "the shipped file" in lines[0] and "**not the shipped file**: an older build" in lines[1]


def test_a_malformed_latency_reference_is_a_clear_error(models: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from seedcam_tools.latency_reference import LatencyReferenceError, load_reference

    bad = tmp_path / "bad.json"
    for text, words in [
        ("{not json", "bad.json"),
        (json.dumps({"format": "something-else"}), "not a seedcam-latency-reference/1 file"),
        (json.dumps({"format": "seedcam-latency-reference/1", "machine": {}}), "'cpu'"),
    ]:
        bad.write_text(text)
        with pytest.raises(LatencyReferenceError, match=re.escape(words)):
            load_reference(bad)
    (models / "latency").mkdir()
    (models / "latency" / "x.json").write_text("[]")
    out = tmp_path / "R.md"
    assert main(["report", "--models", str(models), "--out", str(out), "--invokes", "1", "-q"]) == 1
    assert "not a seedcam-latency-reference/1 file" in capsys.readouterr().err
    assert not out.exists()  # refused before measuring


def test_figures_on_both_worlds_get_a_table_of_their_own(models: Path) -> None:
    worlds = {
        "random": {"int8": {"map50": 0.912, "recall": 0.9, "false_positives_per_frame": 0.05}},
        "other": {"int8": {"map50": 0.5, "recall": 0.61, "false_positives_per_frame": 0.3}},
    }
    metrics = {"summary": {"metric": "mAP@0.5", "int8": 0.8125}, "worlds": worlds}
    (models / "zz_fake" / "metrics.json").write_text(json.dumps(metrics))
    text = render_markdown(build_report(models, invokes=3))
    table = text[text.index("## Accuracy by world") :]
    (row,) = [r for r in _table_rows(table) if r[0] == "`fake-v1`"]
    assert row[1:] == [
        "int8",
        "mAP@0.5 0.8125",
        "mAP 0.912, recall 90 %, 0.05 FP/frame",
        "mAP 0.500, recall 61 %, 0.30 FP/frame",
    ]
    assert not [r for r in _table_rows(table) if r[0].startswith("`lane-v3`")]  # no worlds recorded: no row


def test_the_report_says_when_bundles_were_scored_on_different_draws_of_our_world(models: Path) -> None:
    def scored_on(folder: str, assets: str | None) -> None:
        random: dict[str, object] = {"int8": {"map50": 0.9, "recall": 0.9, "false_positives_per_frame": 0.05}}
        if assets is not None:
            random["assets"] = assets
        metrics = json.loads((models / folder / "metrics.json").read_text())
        metrics["worlds"] = {"random": random}
        (models / folder / "metrics.json").write_text(json.dumps(metrics))

    scored_on("lane", "411 font files in 108 families, 19 images, aaaa")
    scored_on("zz_fake", "411 font files in 108 families, 19 images, aaaa")
    text = render_markdown(build_report(models, invokes=1))
    assert "drew with 411 font files in 108 families, 19 images, aaaa for every bundle" in text
    assert "these differ" not in text

    scored_on("zz_fake", "139 font files in 25 families, 19 images, bbbb")
    text = render_markdown(build_report(models, invokes=1))
    assert "these differ: `lane-v3`: 411 font files in 108 families, 19 images, aaaa; `fake-v1`: 139 font" in text

    scored_on("zz_fake", None)
    text = render_markdown(build_report(models, invokes=1))
    assert "`fake-v1`: not recorded (scored before the assets were)" in text
