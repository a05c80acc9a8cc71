"""``seedcam mcp`` spawned by an MCP client from the same SDK (stdio), on the emulated board (the real firmware)."""

from __future__ import annotations

import base64
import sys
from collections.abc import Callable

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from seedcam_firmware.launcher import EmulatedBoard

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

READ_TOOLS = {"latest_result", "device_info", "health", "snapshot", "wait_for"}


async def _session(check: Callable[[ClientSession], object], link: str, *extra: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "seedcam.cli", "mcp", "-p", link, *extra])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await check(session)  # type: ignore[misc]


def test_mcp_client_lists_tools_reads_the_board_and_is_refused_a_write(
    firmware_factory: Callable[..., EmulatedBoard],
) -> None:
    board = firmware_factory("--fps", "10", "--tasks", "lane")

    async def read_only(session: ClientSession) -> None:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools == READ_TOOLS
        seen = await session.call_tool("wait_for", {"label": "lane_ok", "timeout": 30})
        assert not seen.is_error
        latest = await session.call_tool("latest_result")
        text = latest.content[0].text  # type: ignore[union-attr]
        assert text.startswith("frame ") and "s ago" in text and "lane " in text, text
        info = await session.call_tool("device_info")
        assert '"firmware_version"' in info.content[0].text  # type: ignore[union-attr]
        snap = await session.call_tool("snapshot")
        image = snap.content[0]
        assert image.type == "image" and image.mime_type == "image/jpeg"  # type: ignore[union-attr]
        assert base64.b64decode(image.data)[:2] == b"\xff\xd8"  # type: ignore[union-attr]
        refused = await session.call_tool("config_set", {"key": "camera.fps", "value": 5})
        assert refused.is_error
        bad = await session.call_tool("wait_for", {"label": "stop", "timeout": 3600})
        assert bad.is_error

    anyio.run(_session, read_only, board.link)

    async def writable(session: ClientSession) -> None:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools == READ_TOOLS | {"config_set", "select_tasks"}
        done = await session.call_tool("config_set", {"key": "camera.fps", "value": 5})
        assert not done.is_error and '"value": 5' in done.content[0].text  # type: ignore[union-attr]

    anyio.run(_session, writable, board.link, "--allow-write")
