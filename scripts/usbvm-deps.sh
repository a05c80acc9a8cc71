#!/usr/bin/env bash
# Install what the USB VM tests need (tests/usb/test_usb_vm.py boots shared/usbvm/usb-vm.sh):
# QEMU (x86 system emulator), a static busybox and cpio for the initramfs, bc and file.
# The guest kernel itself is fetched by usb-vm.sh with `apt-get download` on first use (cached).
# Needs root and apt; without them it says what is missing and the VM tests skip.
set -euo pipefail
need=""
command -v qemu-system-x86_64 >/dev/null || need="$need qemu-system-x86"
command -v file >/dev/null || need="$need file"
{ [ -x /bin/busybox ] && command -v file >/dev/null && file -L /bin/busybox | grep -q static; } || need="$need busybox-static"
command -v cpio >/dev/null || need="$need cpio"
command -v bc >/dev/null || need="$need bc"
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "usbvm-deps: missing:$need (needs root and apt-get); the USB VM tests will skip" >&2
  exit 0
fi
echo "usbvm-deps: installing$need" >&2
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null; }; then
  echo "usbvm-deps: could not install$need; the USB VM tests will skip" >&2
fi
