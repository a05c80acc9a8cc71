#!/usr/bin/env bash
# Set up everything, run the static checks (format, lint, types, import contracts), then the whole test suite.
# Everything includes what the USB VM tests (tests/usb) need: scripts/usbvm-deps.sh installs QEMU and the rest
# where root and apt-get allow it (a no-op once they are there, as after .ci/run's own call), else it says in
# one line why those tests will skip. SEEDCAM_USBVM_DEPS=skip leaves the machine's packages alone.
# Likewise the fleet tests' mosquitto (scripts/mosquitto-deps.sh) and the viewer's browser tests' Chromium
# (scripts/browser-deps.sh): installed where root and apt-get allow, else the tests skip saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
. .venv/bin/activate
if [ "${SEEDCAM_USBVM_DEPS:-}" = skip ]; then
  echo "test.sh: SEEDCAM_USBVM_DEPS=skip: QEMU etc. not installed; without them the USB VM tests skip" >&2
elif [ -z "$(PYTHONPATH=tests/usb python -c 'import usbvm; print(usbvm.find_usb_vm_script() or "")')" ]; then
  echo "test.sh: no usb-vm.sh (../shared/usbvm/ or \$SEEDCAM_USBVM_SCRIPT), so the USB VM tests will skip" >&2
else
  scripts/usbvm-deps.sh
fi
scripts/mosquitto-deps.sh
scripts/browser-deps.sh
scripts/check.sh
python -m pytest "$@"
