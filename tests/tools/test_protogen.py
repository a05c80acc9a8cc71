"""The committed generated protobuf code matches the schema."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("grpc_tools")

from seedcam_tools.protogen import (
    OUTPUT_DIR,
    OUTPUT_DIRS,
    PROTO_DIR,
    ProtoGenError,
    stale_files,
    write_generated,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA = Path("seedcam/v1/seedcam.proto")
GENERATED = {OUTPUT_DIR / "seedcam_pb2.py", OUTPUT_DIR / "seedcam_pb2.pyi"}


def test_committed_generated_code_is_fresh():
    stale = stale_files(REPO_ROOT)
    assert stale == [], (
        f"generated protobuf code is stale: {[str(p) for p in stale]}; "
        "regenerate it with `seedcam-tools proto` and commit the result"
    )


@pytest.fixture
def tmp_repo(tmp_path: Path) -> Path:
    """A copy of the schema and the committed generated code in the repo's layout."""
    shutil.copytree(REPO_ROOT / PROTO_DIR, tmp_path / PROTO_DIR)
    for output_dir in OUTPUT_DIRS:
        shutil.copytree(REPO_ROOT / output_dir, tmp_path / output_dir)
    return tmp_path


def test_copy_of_repo_is_fresh(tmp_repo: Path):
    assert stale_files(tmp_repo) == []


def test_schema_change_is_detected_as_stale(tmp_repo: Path):
    schema = tmp_repo / PROTO_DIR / SCHEMA
    text = schema.read_text()
    assert "  float y_max = 4;\n}" in text
    schema.write_text(text.replace("  float y_max = 4;\n}", "  float y_max = 4;\n  float angle = 5;\n}"))
    assert set(stale_files(tmp_repo)) == GENERATED
    # regenerating makes it fresh again, and the new field is in the output
    assert GENERATED <= set(write_generated(tmp_repo))  # it rewrites every schema
    assert stale_files(tmp_repo) == []
    assert b"angle" in (tmp_repo / OUTPUT_DIR / "seedcam_pb2.pyi").read_bytes()


def test_hand_edited_output_is_stale(tmp_repo: Path):
    target = tmp_repo / OUTPUT_DIR / "seedcam_pb2.py"
    target.write_bytes(target.read_bytes() + b"# hand edit\n")
    assert stale_files(tmp_repo) == [OUTPUT_DIR / "seedcam_pb2.py"]


def test_missing_generated_file_is_stale(tmp_repo: Path):
    (tmp_repo / OUTPUT_DIR / "seedcam_pb2.pyi").unlink()
    assert stale_files(tmp_repo) == [OUTPUT_DIR / "seedcam_pb2.pyi"]


def test_broken_schema_raises_protogen_error(tmp_repo: Path):
    schema = tmp_repo / PROTO_DIR / SCHEMA
    schema.write_text(schema.read_text() + "\nmessage Broken { float = 1; }\n")
    with pytest.raises(ProtoGenError):
        stale_files(tmp_repo)
