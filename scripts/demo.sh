#!/usr/bin/env bash
# Set up, start the firmware on the emulated board (synthetic road camera: a drive past signs and
# plates, link on a pty), and run the ten-line example against it: lane state every frame, the signs
# and plates detected, the text read off the plates. Ctrl-C stops both and removes the temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. .venv/bin/activate
workdir=$(mktemp -d)
fw="" example=""
cleanup() {
  for pid in $example $fw; do kill "$pid" 2>/dev/null || true; done
  for pid in $example $fw; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT  # Ctrl-C: exit, which runs cleanup
trap 'exit 143' TERM
trap 'exit 129' HUP
seedcam-firmware run --config firmware/config/default.toml --no-persist-config --pty-link "$workdir/sensor" >"$workdir/firmware.log" 2>&1 &
fw=$!
for _ in $(seq 300); do
  grep -q "link at" "$workdir/firmware.log" && break
  kill -0 "$fw" 2>/dev/null || { cat "$workdir/firmware.log"; exit 1; }
  sleep 0.1
done
grep -m 1 "link at" "$workdir/firmware.log" || { cat "$workdir/firmware.log"; echo "demo: no link after 30 s" >&2; exit 1; }
# in the background, where the example ignores Ctrl-C (SIGINT) and this script's trap stops it without a traceback
SEEDCAM_PORT="$workdir/sensor" python examples/ten_lines.py &
example=$!
wait "$example"
