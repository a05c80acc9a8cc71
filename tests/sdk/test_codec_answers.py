"""The codec's answers to calls and updates, and its one convention: ``to_pb(value, out=None) -> message``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import ProtocolError
from seedcam.protocol import codec
from seedcam.types import Box, ConfigValue, Health, LinkStats, Result, Snapshot, TaskList
from seedcam.update_types import InstallResult, SlotGroup, SlotInfo

TEXT = st.text(max_size=12)
U32 = st.integers(0, 2**32 - 1)
U64 = st.integers(0, 2**64 - 1)
F32 = st.floats(width=32, allow_nan=False)
NAMES = st.lists(TEXT, max_size=4).map(tuple)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)

slot_infos = st.builds(SlotInfo, TEXT, TEXT, TEXT, TEXT, U64, st.booleans(), st.booleans(), TEXT)
slot_groups = st.builds(SlotGroup, TEXT, st.lists(slot_infos, max_size=2).map(tuple), U64, TEXT)
installs = st.builds(InstallResult, TEXT, TEXT, TEXT, st.booleans(), F32, TEXT, st.booleans())


def _through_the_wire(message: pb.Response) -> pb.Response:
    return codec.parse(pb.Response, message.SerializeToString())


@settings(max_examples=50, deadline=None)
@given(value=st.builds(ConfigValue, TEXT, JSON, st.booleans(), st.booleans()))
def test_config_value_roundtrip(value: ConfigValue) -> None:
    back = _through_the_wire(pb.Response(config=codec.config_value_to_pb(value)))
    assert codec.config_value_from_pb(back.config) == value


def test_config_value_that_is_not_json_is_a_protocol_error() -> None:
    assert codec.config_value_from_pb(pb.ConfigValue(key="k")) == ConfigValue("k", None)
    with pytest.raises(ProtocolError, match="undecodable config value"):
        codec.config_value_from_pb(pb.ConfigValue(key="k", value_json="{nope"))


@settings(max_examples=30, deadline=None)
@given(snap=st.builds(Snapshot, st.binary(max_size=64), U64, U64, U32, U32))
def test_snapshot_roundtrip(snap: Snapshot) -> None:
    back = _through_the_wire(pb.Response(snapshot=codec.snapshot_to_pb(snap)))
    assert codec.snapshot_from_pb(back.snapshot) == snap


@settings(max_examples=30, deadline=None)
@given(tasks=st.builds(TaskList, NAMES, NAMES))
def test_task_list_roundtrip(tasks: TaskList) -> None:
    back = _through_the_wire(pb.Response(tasks=codec.task_list_to_pb(tasks)))
    assert codec.task_list_from_pb(back.tasks) == tasks


@settings(max_examples=30, deadline=None)
@given(install=installs, groups=st.lists(slot_groups, max_size=3).map(tuple))
def test_install_and_slot_roundtrips(install: InstallResult, groups: tuple[SlotGroup, ...]) -> None:
    installed, slots = pb.UpdateResponse(), pb.UpdateResponse()  # one body per answer
    codec.install_result_to_pb(install, installed.installed)
    codec.slot_groups_to_pb(groups, slots.slots)
    back = codec.parse(pb.UpdateResponse, installed.SerializeToString())
    assert codec.install_result_from_pb(back.installed) == install
    assert codec.slot_groups_from_pb(codec.parse(pb.UpdateResponse, slots.SerializeToString()).slots) == groups


def test_every_to_pb_fills_out_when_given_and_returns_what_it_filled() -> None:
    health = Health("boot", 1.0, 2.0, 3, 4, 5, LinkStats(**dict.fromkeys(LinkStats.__dataclass_fields__, 1)))
    event = pb.StatusEvent()
    filled = codec.health_to_pb(health, event.health)
    assert event.WhichOneof("body") == "health" and filled == event.health
    assert codec.health_from_pb(event.health) == health
    fresh = codec.box_to_pb(Box(0.25, 0.5, 0.75, 1.0))
    assert isinstance(fresh, pb.Box) and codec.box_from_pb(fresh) == Box(0.25, 0.5, 0.75, 1.0)
    outer = pb.Result()
    assert codec.result_to_pb(Result(5, 6, model_ids=("m",)), outer) is outer
    assert codec.result_from_pb(outer) == codec.result_from_pb(codec.result_to_pb(Result(5, 6, model_ids=("m",))))
