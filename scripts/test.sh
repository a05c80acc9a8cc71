#!/usr/bin/env bash
# Set up everything, run the static checks (format, lint, types, import contracts), then the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
scripts/check.sh
. .venv/bin/activate
python -m pytest "$@"
