"""VisionSeed mode in process: the real daemon on a ``pair://`` link, driven with VisionSeed frames.

The host side here is our own sans-IO VisionSeed framing (fast, and able to
send damaged bytes); tests/e2e/test_visionseed_client.py drives the firmware
with the published client.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import MODELS

from seedcam.protocol import codec
from seedcam.transport import Transport, open_transport
from seedcam_firmware.config import config_from_dict
from seedcam_firmware.daemon import Daemon
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.config_text import parse_config_text
from seedcam_firmware.visionseed.datav2 import decode_datav2
from seedcam_firmware.visionseed.errors import VisionSeedRequestError
from seedcam_firmware.visionseed.framing import VisionSeedDecoder, encode_visionseed
from seedcam_firmware.visionseed.link import VisionSeedPersonality
from seedcam_firmware.visionseed.results import MODEL_LANE

WAIT_S = 10.0
Code = vs.YtRpcResponse
Fn = vs.YtRpc
LANE = MODELS / "lane"


class VisionSeedHost:
    """The host end: VisionSeed frames over a transport; results and heartbeats kept apart from responses."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.decoder = VisionSeedDecoder()
        self.results: list[vs.YtResult] = []
        self.responses: dict[int, vs.YtRpcResponse] = {}
        self._seq = 0

    def pump(self, until: Callable[[], bool], timeout: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout} s")
            for payload in self.decoder.feed(self.transport.read(65536, 0.05)):
                message = vs.YtMsg()
                message.ParseFromString(payload)
                if message.HasField("response"):
                    self.responses[message.response.sequenceId] = message.response
                else:
                    self.results.append(message.result)

    def send_raw(self, data: bytes) -> None:
        self.transport.write(data, WAIT_S)

    def call(self, func: int, **params: Any) -> vs.YtRpcResponse:
        self._seq += 1
        seq = self._seq
        message = vs.YtMsg(rpc=vs.YtRpc(func=func, sequenceId=seq, **params))
        self.send_raw(encode_visionseed(message.SerializeToString()))
        self.pump(lambda: seq in self.responses)
        return self.responses.pop(seq)


class Board:
    def __init__(self, tmp_path: Path, **sections: dict[str, Any]) -> None:
        models = tmp_path / "models"
        models.mkdir(exist_ok=True)
        url = f"pair://visionseed-{uuid.uuid4().hex[:12]}"
        config = {
            "link": {"url": url, "protocol": "visionseed", "health_interval_s": 0.1},
            "camera": {"source": "synthetic", "width": 320, "height": 240, "fps": 30.0},
            "models": {"dir": str(models), "lane": str(LANE / "manifest.json")},
            "tasks": {"enabled": ["lane"]},
        }
        for section, table in sections.items():
            config.setdefault(section, {}).update(table)
        self.models = models
        self.daemon = Daemon(config_from_dict(config))
        self.daemon.start()
        self.host = VisionSeedHost(open_transport(url))

    def close(self) -> None:
        self.host.transport.close()
        self.daemon.stop()


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Board]:
    b = Board(tmp_path)
    yield b
    b.close()


def test_the_daemon_speaks_visionseed_heartbeat_zero_first_then_lane_results(board: Board) -> None:
    host = board.host
    assert isinstance(board.daemon._link.personality, VisionSeedPersonality)
    host.pump(lambda: sum(r.HasField("dataV2") for r in host.results) >= 3)
    beats = [r.systemStatusResult.heartBeatId for r in host.results if r.HasField("systemStatusResult")]
    assert beats and beats[0] == 0 and beats == list(range(len(beats)))
    lane_results = [r for r in host.results if r.HasField("dataV2")]
    assert [n.path for n in decode_datav2(lane_results[0].dataV2)] == [(MODEL_LANE,)]
    ids = [r.frameId for r in lane_results]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_device_info_is_space_separated_with_the_version_first(board: Board) -> None:
    response = board.host.call(Fn.getDeviceInfo)
    assert response.code == Code.SUCC
    tokens = response.strData.split(" ")
    info = board.daemon.device_info()
    assert tokens[:4] == [info.firmware_version, "seedcam", info.board, info.serial_number]
    assert "320x240" in tokens and "tasks=lane" in tokens and "models=lane-v3-int8" in tokens


def test_the_published_request_vectors_are_answered(board: Board) -> None:
    """The two RPC vectors of the wire description, byte for byte as a client sends them."""
    host = board.host
    host.send_raw(bytes.fromhex("10 00 00 06 ac 5a 0a 04 08 01 11 01 01 a0 b5"))  # getDeviceInfo, seq 1
    host.send_raw(bytes.fromhex("10 00 00 08 4d 94 0a 06 08 29 11 01 11 01 20 11 00 f0 df"))  # setDebugDrawing
    host.pump(lambda: {1, 16} <= set(host.responses))
    assert host.responses[1].code == Code.SUCC and host.responses[1].strData.startswith("0.1.0 seedcam ")
    assert host.responses[16].code == Code.ERROR_NOT_EXIST


def test_unsupported_functions_answer_a_code_never_silence(board: Board) -> None:
    for func in (
        Fn.setModel,
        Fn.upgradeFirmware,
        Fn.setExposure,
        Fn.setFlasher,
        Fn.takeRawPicture,
        Fn.downloadFile,
        Fn.formatPartition,
        Fn.registerFaceIdFromCamera,
        Fn.listFaceId,
    ):
        response = board.host.call(func)
        assert response.code == Code.ERROR_NOT_EXIST, Fn.Function.Name(func)
        assert "not supported" in response.strData


def test_results_reach_the_host_without_a_protobuf_round_trip(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon hands the link typed Results: the native codec is not on the VisionSeed path."""
    for name in ("result_to_pb", "result_from_pb"):
        monkeypatch.setattr(codec, name, lambda *args, **kwargs: pytest.fail("a Result went through the native codec"))
    host = board.host
    host.pump(lambda: any(r.HasField("dataV2") for r in host.results))  # frames already in flight
    seen = len(host.results)
    host.pump(lambda: sum(r.HasField("dataV2") for r in host.results[seen:]) >= 3)


def test_garbage_and_corrupted_frames_are_counted_and_the_link_keeps_working(board: Board) -> None:
    host = board.host
    good = encode_visionseed(vs.YtMsg(rpc=vs.YtRpc(func=Fn.getDeviceInfo, sequenceId=900)).SerializeToString())
    flipped = bytearray(good)
    flipped[-3] ^= 0x04  # a payload bit: payload CRC error
    bad_header = bytearray(good)
    bad_header[2] ^= 0x01  # a length bit: header CRC error
    oversize = bytes.fromhex("10 7f ff ff") + b"\x00\x00"  # CRC of a 8 MiB length is wrong too; counted
    garbage = bytes(range(0x20, 0x80)) * 3
    host.send_raw(garbage + bytes(flipped) + bytes(bad_header) + good[:7] + oversize + good)
    host.pump(lambda: 900 in host.responses)
    assert host.responses.pop(900).code == Code.SUCC  # the intact frame after all that is answered
    counters = board.daemon._link.counters
    assert counters.crc_errors >= 2 and counters.decode_errors >= 1
    assert counters.bytes_dropped >= len(garbage)
    report = host.call(Fn.getLastError)
    fields = dict(token.split("=", 1) for token in report.strData.split(" "))
    assert int(fields["crc_errors"]) == counters.crc_errors
    assert int(fields["bytes_dropped"]) >= len(garbage)


def test_an_undecodable_rpc_is_answered_and_counted(board: Board) -> None:
    # func is required by the schema: an RPC without it cannot be parsed strictly
    unknown = vs.YtMsg(rpc=vs.YtRpc(sequenceId=77))
    board.host.send_raw(encode_visionseed(unknown.SerializePartialToString()))
    board.host.pump(lambda: 77 in board.host.responses)
    assert board.host.responses[77].code == Code.ERROR_PARAMETERS
    future = bytes.fromhex("0a 04 08 63 10 4e")  # rpc{func=99 (a function this schema does not know), seq=78}
    board.host.send_raw(encode_visionseed(future))
    board.host.pump(lambda: 78 in board.host.responses)
    assert board.host.responses[78].code == Code.ERROR_PARAMETERS
    assert board.daemon._link.undecodable_requests == 2
    assert board.host.call(Fn.getDeviceInfo).code == Code.SUCC


def test_get_and_set_config_as_toml_text(board: Board) -> None:
    host = board.host
    text = host.call(Fn.getConfig, strParams="detect").filePart.data.decode()
    assert "[detect]" in text and "score_threshold = 0.5" in text
    part = vs.FilePart(path="detect", totalLength=0, offset=0, data=b"score_threshold = 0.65\n")
    response = host.call(Fn.setConfig, filePart=part)
    assert response.code == Code.SUCC and "after a reboot" not in response.strData
    assert board.daemon.config.detect.score_threshold == 0.65
    assert "0.65" in host.call(Fn.getConfig, strParams="detect.score_threshold").filePart.data.decode()
    whole = host.call(Fn.getConfig, strParams="").filePart.data.decode()
    assert "[camera]" in whole and "[link]" in whole and 'protocol = "visionseed"' in whole
    camera = vs.FilePart(path="", totalLength=0, offset=0, data=b"[camera]\nfps = 12\n")
    restart = host.call(Fn.setConfig, filePart=camera)
    assert restart.code == Code.SUCC and "camera.fps" in restart.strData and "reboot" in restart.strData
    assert host.call(Fn.resetConfig, strParams="detect").code == Code.SUCC
    assert board.daemon.config.detect.score_threshold == 0.5


@pytest.mark.parametrize(
    ("domain", "text", "code"),
    [
        ("detect", "score_threshold = 7", Code.ERROR_PARAMETERS),  # out of range
        ("detect", "scor_threshold = 0.3", Code.ERROR_PARAMETERS),  # unknown key
        ("detect", "score_threshold = ", Code.ERROR_PARAMETERS),  # not TOML
        ("detect", "[camera]\nfps = 5", Code.ERROR_PARAMETERS),  # outside the domain
    ],
)
def test_a_bad_set_config_changes_nothing(board: Board, domain: str, text: str, code: int) -> None:
    before = board.daemon.config
    part = vs.FilePart(path=domain, totalLength=len(text), offset=0, data=text.encode())
    response = board.host.call(Fn.setConfig, filePart=part)
    assert response.code == code and response.strData
    assert board.daemon.config == before
    assert board.host.call(Fn.getConfig, strParams="nosuchsection").code == Code.ERROR_NOT_EXIST


def test_camera_rotation_is_set_for_the_next_boot(board: Board) -> None:
    assert board.host.call(Fn.setCameraRotation, intParams=2).code == Code.SUCC  # two quarter turns
    assert board.daemon.config.camera.rotation == 180
    assert board.host.call(Fn.setCameraRotation, intParams=45).code == Code.ERROR_PARAMETERS


def upload(host: VisionSeedHost, path: str, data: bytes, chunk: int = 100_000) -> vs.YtRpcResponse:
    response = vs.YtRpcResponse(code=Code.SUCC)
    for offset in range(0, max(len(data), 1), chunk):
        part = vs.FilePart(path=path, totalLength=len(data), offset=offset, data=data[offset : offset + chunk])
        response = host.call(Fn.uploadFile, filePart=part)
        if response.code not in (Code.SUCC, Code.CONTINUE):
            return response
    return response


def lane_descriptor(**changes: Any) -> bytes:
    manifest = json.loads((LANE / "manifest.json").read_text())
    descriptor = {key: manifest[key] for key in ("task", "input", "outputs", "decoder", "camera")}
    descriptor.update({"name": "my lane", "version": "2.0.0"}, **changes)
    return json.dumps(descriptor).encode()


def test_files_upload_in_chunks_list_and_delete(board: Board) -> None:
    host = board.host
    data = bytes(range(256)) * 1000
    assert upload(host, "/models/notes.json", data, chunk=60_000).code == Code.SUCC
    assert (board.models / "notes.json").read_bytes() == data
    listing = host.call(Fn.listFile, strParams="/models").fileListResult
    assert [(f.name, f.isFolder, f.size) for f in listing.files] == [("notes.json", False, len(data))]
    root = host.call(Fn.listFile, strParams="/").fileListResult
    assert [(f.name, f.isFolder) for f in root.files] == [("models", True)]
    assert host.call(Fn.deleteFile, strParams="/models/notes.json").code == Code.SUCC
    assert not (board.models / "notes.json").exists()
    assert host.call(Fn.deleteFile, strParams="/models/notes.json").code == Code.ERROR_NOT_EXIST


def test_chunks_out_of_order_are_refused_and_a_resent_chunk_is_fine(board: Board) -> None:
    host = board.host

    def part(offset: int, data: bytes, total: int = 10) -> vs.YtRpcResponse:
        return host.call(
            Fn.uploadFile, filePart=vs.FilePart(path="/models/x.json", totalLength=total, offset=offset, data=data)
        )

    assert part(0, b"abcd").code == Code.CONTINUE
    assert part(0, b"abcd").code == Code.CONTINUE  # the client retries a chunk whose answer it lost
    assert part(8, b"ij").code == Code.ERROR_PARAMETERS  # skips 4..8
    assert part(4, b"efghijk").code == Code.ERROR_PARAMETERS  # runs past the end
    assert not (board.models / "x.json").exists()  # nothing in place before the last chunk
    assert part(4, b"efgh").code == Code.CONTINUE
    assert part(8, b"ij").code == Code.SUCC
    assert (board.models / "x.json").read_bytes() == b"abcdefghij"
    assert not list(board.models.glob(".*"))  # no partial file left behind


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/etc/passwd", Code.ERROR_INVALID_PATH),
        ("/models/../escape", Code.ERROR_INVALID_PATH),
        ("/models", Code.ERROR_INVALID_PATH),
        ("/models/nofolder/x", Code.ERROR_INVALID_PATH),
    ],
)
def test_uploads_stay_inside_models(board: Board, path: str, code: int) -> None:
    assert upload(board.host, path, b"x").code == code


def test_a_too_large_upload_is_refused_up_front(board: Board) -> None:
    part = vs.FilePart(path="/models/big.tflite", totalLength=2**31 - 1, offset=0, data=b"x")
    assert board.host.call(Fn.uploadFile, filePart=part).code == Code.ERROR_FILE_EXCEED_LIMITS


def test_a_tflite_and_json_pair_becomes_a_checked_bundle(board: Board) -> None:
    host = board.host
    assert upload(host, "/models/mylane.json", lane_descriptor()).code == Code.SUCC  # waits for its model
    response = upload(host, "/models/mylane.tflite", (LANE / "lane_int8.tflite").read_bytes())
    assert response.code == Code.SUCC and "installed model mylane-int8 (lane, int8)" in response.strData
    bundle = board.models / "mylane"
    assert sorted(p.name for p in bundle.iterdir()) == ["manifest.json", "mylane.tflite", "visionseed.json"]
    assert not (board.models / "mylane.tflite").exists() and not (board.models / "mylane.json").exists()
    listing = host.call(Fn.listFile, strParams="/models").fileListResult
    assert [(f.name, f.isFolder) for f in listing.files] == [("mylane", True)]
    # the firmware runs it: the same loader, through the config
    from seedcam_firmware.tasks.lane import load_lane_task

    config = config_from_dict({"models": {"dir": str(board.models), "lane": "mylane/manifest.json"}})
    task = load_lane_task(config)
    assert task.model.id == "mylane-int8" and task.model.version == "2.0.0"
    task.close()


def test_a_pair_whose_descriptor_disagrees_with_the_model_is_refused_and_kept(board: Board) -> None:
    host = board.host
    wrong = lane_descriptor(outputs={"lane_state": [1, 5]})
    assert upload(host, "/models/bad.tflite", (LANE / "lane_int8.tflite").read_bytes()).code == Code.SUCC
    response = upload(host, "/models/bad.json", wrong)
    assert response.code == Code.ERROR_PARAMETERS and "bad" in response.strData
    assert (board.models / "bad.tflite").exists() and not (board.models / "bad").exists()
    assert not list(board.models.glob(".*"))
    garbage = upload(host, "/models/bad.json", b"{not json")
    assert garbage.code == Code.ERROR_PARAMETERS and "JSON" in garbage.strData


def test_the_bundle_of_a_loaded_model_cannot_be_deleted(tmp_path: Path) -> None:
    shutil.copytree(LANE, tmp_path / "models" / "lane")
    board = Board(tmp_path, models={"lane": "lane/manifest.json"})
    try:
        for path in ("/models/lane", "/models/lane/lane_int8.tflite"):
            assert board.host.call(Fn.deleteFile, strParams=path).code == Code.ERROR_PERMISSION
        assert board.host.call(Fn.deleteFile, strParams="/models").code == Code.ERROR_PERMISSION
        # pointing the config elsewhere does not unprotect the bundle still loaded until the reboot
        part = vs.FilePart(path="models", totalLength=0, offset=0, data=b'lane = "other/manifest.json"\n')
        assert board.host.call(Fn.setConfig, filePart=part).code == Code.SUCC
        assert board.host.call(Fn.deleteFile, strParams="/models/lane").code == Code.ERROR_PERMISSION
        assert (tmp_path / "models" / "lane" / "lane_int8.tflite").exists()
    finally:
        board.close()


def test_reboot_answers_then_asks_the_daemon_to_restart(board: Board) -> None:
    assert not board.daemon.restart_requested
    assert board.host.call(Fn.reboot).code == Code.SUCC
    assert board.daemon.wait(WAIT_S) and board.daemon.restart_requested


def test_what_a_power_cut_left_half_done_is_cleaned_up_at_boot(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / ".half.bin.part").write_bytes(b"partial")
    (models / ".new.import").mkdir()
    shutil.copytree(LANE, models / ".swapped.old")  # cut between the two renames of a bundle swap
    (models / "kept").mkdir()
    (models / ".kept.old").mkdir()  # cut after the second rename
    board = Board(tmp_path)
    try:
        assert sorted(p.name for p in models.iterdir()) == ["kept", "swapped"]
        assert (models / "swapped" / "manifest.json").is_file()
    finally:
        board.close()


def test_set_config_cannot_change_updates_keys(tmp_path: Path) -> None:
    board = Board(tmp_path, updates={"dir": str(tmp_path / "updates"), "public_keys": ["ab" * 32]})
    try:
        before = board.daemon.config
        for domain, text in (
            ("updates", "public_keys = []\n"),
            ("", '[updates]\ndir = ""\n'),
            ("", '[camera]\nfps = 12\n[updates]\ntarget = "any"\n'),
        ):
            part = vs.FilePart(path=domain, totalLength=len(text), offset=0, data=text.encode())
            response = board.host.call(Fn.setConfig, filePart=part)
            assert response.code == Code.ERROR_PERMISSION and "read-only" in response.strData
        assert board.host.call(Fn.resetConfig, strParams="updates").code == Code.ERROR_PERMISSION
        assert board.daemon.config == before  # nothing changed, not even camera.fps
    finally:
        board.close()


def test_an_upload_never_changes_a_bundle_folder_and_only_model_pairs_are_accepted(tmp_path: Path) -> None:
    shutil.copytree(LANE, tmp_path / "models" / "lane")
    shutil.copytree(LANE, tmp_path / "models" / "spare")  # not loaded, but a bundle all the same
    board = Board(tmp_path, models={"lane": "lane/manifest.json"})
    try:
        host = board.host
        manifest = (tmp_path / "models" / "lane" / "manifest.json").read_bytes()
        for path in (
            "/models/lane/manifest.json",
            "/models/lane/lane_int8.tflite",
            "/models/notes.bin",
            "/models/.hidden.json",
            "/models/.lane.import/manifest.json",
        ):
            assert upload(host, path, b"{}").code == Code.ERROR_INVALID_PATH, path
        assert (tmp_path / "models" / "lane" / "manifest.json").read_bytes() == manifest
        for name in ("lane", "spare"):  # NAME.json + NAME.tflite would have replaced /models/NAME
            assert upload(host, f"/models/{name}.json", lane_descriptor()).code == Code.ERROR_PERMISSION
            assert upload(host, f"/models/{name}.tflite", b"x").code == Code.ERROR_PERMISSION
        assert (tmp_path / "models" / "lane" / "manifest.json").read_bytes() == manifest
        assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["lane", "spare"]
    finally:
        board.close()


def test_a_pair_whose_bundle_appeared_meanwhile_is_not_imported_over_it(
    board: Board, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundle folder appears while the pair is being checked: the final rename must not replace it."""
    from seedcam_firmware.visionseed import custom_model
    from seedcam_firmware.visionseed.errors import VisionSeedRequestError

    (board.models / "mine.json").write_bytes(lane_descriptor())
    shutil.copyfile(LANE / "lane_int8.tflite", board.models / "mine.tflite")
    real_self_test = custom_model._self_test

    def self_test_meanwhile_a_bundle_appears(task, config) -> None:  # noqa: ANN001
        real_self_test(task, config)
        shutil.copytree(LANE, board.models / "mine")

    monkeypatch.setattr(custom_model, "_self_test", self_test_meanwhile_a_bundle_appears)
    with pytest.raises(VisionSeedRequestError) as err:
        custom_model.import_model_pair(board.models, "mine", board.daemon.config)
    assert err.value.code == Code.ERROR_PERMISSION
    assert (board.models / "mine" / "manifest.json").read_bytes() == (LANE / "manifest.json").read_bytes()
    assert not (board.models / ".mine.import").exists()


def test_uploads_are_refused_while_signed_updates_are_required(tmp_path: Path) -> None:
    board = Board(tmp_path, updates={"dir": str(tmp_path / "updates"), "public_keys": ["ab" * 32]})
    try:
        response = upload(board.host, "/models/mylane.json", lane_descriptor())
        assert response.code == Code.ERROR_PERMISSION and "signed" in response.strData
        assert not list(board.models.iterdir())
    finally:
        board.close()


def test_a_symlinked_folder_cannot_take_an_upload_or_a_listing_out_of_models(board: Board, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (board.models / "link").symlink_to(outside, target_is_directory=True)
    assert upload(board.host, "/models/link/evil.json", b"{}").code == Code.ERROR_INVALID_PATH
    assert board.host.call(Fn.listFile, strParams="/models/link").code == Code.ERROR_INVALID_PATH
    assert board.host.call(Fn.deleteFile, strParams="/models/link/x.json").code == Code.ERROR_INVALID_PATH
    assert not list(outside.iterdir())


def test_a_slow_import_runs_off_the_reader_thread(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from seedcam_firmware.visionseed import rpc as vs_rpc

    importing, release = threading.Event(), threading.Event()
    real_import = vs_rpc.import_model_pair

    def slow_import(models_dir: Path, name: str, config: Any) -> Any:  # loading and running a model takes a while
        if (models_dir / f"{name}.tflite").exists() and (models_dir / f"{name}.json").exists():
            importing.set()
            assert release.wait(WAIT_S)
        return real_import(models_dir, name, config)

    monkeypatch.setattr(vs_rpc, "import_model_pair", slow_import)
    host = board.host
    assert upload(host, "/models/mylane.json", lane_descriptor()).code == Code.SUCC
    data = (LANE / "lane_int8.tflite").read_bytes()
    start = len(data) - 1000
    for offset in range(0, start, 100_000):
        part = vs.FilePart(
            path="/models/mylane.tflite",
            totalLength=len(data),
            offset=offset,
            data=data[offset : min(offset + 100_000, start)],
        )
        assert host.call(Fn.uploadFile, filePart=part).code == Code.CONTINUE
    last = vs.FilePart(path="/models/mylane.tflite", totalLength=len(data), offset=start, data=data[start:])
    host.send_raw(
        encode_visionseed(vs.YtMsg(rpc=vs.YtRpc(func=Fn.uploadFile, sequenceId=700, filePart=last)).SerializeToString())
    )
    assert importing.wait(WAIT_S)
    before = board.daemon._link.counters.bytes_dropped
    host.send_raw(bytes(range(0x20, 0x80)))  # the reader still reads and counts while the import runs
    host.pump(lambda: board.daemon._link.counters.bytes_dropped > before)
    assert 700 not in host.responses
    release.set()
    host.pump(lambda: 700 in host.responses)
    assert host.responses.pop(700).code == Code.SUCC and (board.models / "mylane").is_dir()


def test_set_config_text_nested_thousands_deep_is_a_parameter_error_not_internal() -> None:
    """A hostile setConfig text (finding 9 of the security issue) answers ERROR_PARAMETERS, not a crash."""
    text = "x = " + "[" * 5000 + "]" * 5000
    with pytest.raises(VisionSeedRequestError, match="nested too deeply") as info:
        parse_config_text("pipeline", text)
    assert info.value.code == vs.YtRpcResponse.ERROR_PARAMETERS
