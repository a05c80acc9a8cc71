#!/usr/bin/env bash
# The static checks of the test command: formatting, lint, types, import contracts.
# Run after scripts/setup.sh --dev (scripts/test.sh runs it before the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
ruff format --check .
ruff check .
mypy                # mypy.ini: the host SDK, the firmware and the model tools
lint-imports        # .importlinter: the SDK imports neither firmware nor tools; no cycles
