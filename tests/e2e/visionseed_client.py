"""Drive a sensor with the published ``visionseed`` client (PyPI 1.2.1), as a VisionSeed user's script does.

Run in a subprocess with ``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python`` (the
client's generated code needs it on protobuf >= 4)::

    python visionseed_client.py PORT PLAN.json OUT.json

PLAN is a list of steps; OUT receives one JSON value per step. Steps:

* ``["info"]`` -> getDeviceInfo's tokens
* ``["results", n, [paths...]]`` -> n results read with recvRunOnce; for each the frameId and,
  per path, what ``getResult(path)`` gives (a count, a rect, a string, an array, or null);
  a path element ``"i"`` is expanded to every index below the count at its parent path
* ``["list", folder]`` -> listFile entries as [name, isFolder, size]
* ``["get_config", domain]`` / ``["set_config", domain, text]`` / ``["reset_config", domain]``
* ``["upload", local_file, remote_path]`` -> the client's own sendFile
* ``["call", function_name, str_params]`` -> the response code of a bare RPC (reboot, getLastError...)
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import serial
from visionseed import YtRpc, YtVisionSeed

RESULT_TIMEOUT_S = 20.0


def _node(value: Any) -> Any:
    if value is None or isinstance(value, int):
        return value
    kind = getattr(value, "type", "")
    if kind == "YtVisionSeedResultTypeRect":
        return {"conf": value.conf, "cls": value.cls, "x": value.x, "y": value.y, "w": value.w, "h": value.h}
    if kind == "YtVisionSeedResultTypeString":
        return {"conf": value.conf, "str": value.str}
    if kind == "YtVisionSeedResultTypeArray":
        return {"array": value.array}
    if kind == "YtVisionSeedResultTypeClassification":
        return {"conf": value.conf, "cls": value.cls}
    return repr(value)


def _expand(result: Any, path: list[Any]) -> dict[str, Any]:
    if "i" not in path:
        return {",".join(map(str, path)): _node(result.getResult(path))}
    at = path.index("i")
    count = result.getResult(path[:at]) or 0
    out: dict[str, Any] = {}
    for i in range(count):
        out.update(_expand(result, path[:at] + [i] + path[at + 1 :]))
    return out


def _results(sensor: YtVisionSeed, count: int, paths: list[list[Any]]) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + RESULT_TIMEOUT_S
    while len(got) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(got)} of {count} results within {RESULT_TIMEOUT_S} s")
        result, message = sensor.recvRunOnce()
        if result is None:
            continue
        entry: dict[str, Any] = {"frameId": message.result.frameId}
        for path in paths:
            entry.update(_expand(result, path))
        got.append(entry)
    return got


def _step(sensor: YtVisionSeed, step: list[Any]) -> Any:
    kind = step[0]
    if kind == "info":
        return sensor.getDeviceInfo()
    if kind == "results":
        return _results(sensor, step[1], step[2])
    if kind == "list":
        return [[f.name, f.isFolder, f.size] for f in sensor.listFile(step[1])]
    if kind == "get_config":
        return sensor.getConfig(step[1])
    if kind == "set_config":
        sensor.setConfig(step[1], step[2])
        return True
    if kind == "reset_config":
        sensor.resetConfig(step[1])
        return True
    if kind == "upload":
        sensor.datalink.sendFile(step[1], step[2])
        return True
    if kind == "call":
        rpc = YtRpc()
        rpc.func = getattr(YtRpc, step[1])
        if len(step) > 2:
            rpc.strParams = step[2]
        try:
            response = sensor.datalink.sendRpcMsg(rpc)
        except Exception as exc:  # the client raises a plain Exception for an error code
            return {"error": str(exc)}
        return {"code": response.response.code, "strData": response.response.strData}
    raise ValueError(f"unknown step {kind!r}")


def main() -> int:
    port_path, plan_path, out_path = sys.argv[1:4]
    plan = json.loads(open(plan_path).read())
    port = serial.Serial(port_path, 115200, timeout=2)
    try:
        sensor = YtVisionSeed(port)
        outputs = [_step(sensor, step) for step in plan]
    finally:
        port.close()
    with open(out_path, "w") as out:
        json.dump(outputs, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
