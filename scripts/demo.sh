#!/usr/bin/env bash
# Set up, start the firmware on the emulated board (synthetic road camera, link on a pty),
# and run the ten-line example against it. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. .venv/bin/activate
workdir=$(mktemp -d)
trap 'kill "$fw" 2>/dev/null; wait "$fw" 2>/dev/null; rm -rf "$workdir"' EXIT
seedcam-firmware run --config firmware/config/default.toml --pty-link "$workdir/sensor" >"$workdir/firmware.log" 2>&1 &
fw=$!
for _ in $(seq 100); do
  grep -q "link at" "$workdir/firmware.log" && break
  kill -0 "$fw" 2>/dev/null || { cat "$workdir/firmware.log"; exit 1; }
  sleep 0.1
done
grep -m 1 "link at" "$workdir/firmware.log"
SEEDCAM_PORT="$workdir/sensor" python examples/ten_lines.py
