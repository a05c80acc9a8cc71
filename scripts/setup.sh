#!/usr/bin/env bash
# Create .venv and install seedcam into it.
#   scripts/setup.sh          the SDK and the firmware (enough for the demo)
#   scripts/setup.sh --dev    also the model tools and the test dependencies
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
if [ "${1:-}" = "--dev" ]; then
  scripts/world-assets.sh      # fonts of the randomized training world (Debian packages)
  scripts/evalworld-assets.sh  # fonts and images of the independent evaluation world
  python -m pip install -q -e 'host_sdk[usb,view,record,mqtt,mcp,catalog]' -e firmware -e 'tools[train]' -r requirements-dev.txt
  python -m pip install -q -e "firmware[sim]"  # the AGV simulator's PNG (tests/agv)
else
  python -m pip install -q -e host_sdk -e firmware
fi
