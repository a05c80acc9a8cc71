#!/usr/bin/env bash
# Debian packages of the seedcam evaluation world (tools/seedcam_tools/otherworld).
# These fonts and images are used ONLY by the evaluation renderer, never by the training world.
set -euo pipefail

PACKAGES=(
  fonts-crosextra-carlito
  fonts-crosextra-caladea
  fonts-go
  fonts-texgyre
  fonts-noto-mono
  fonts-b612
  fonts-ebgaramond
  gnome-backgrounds
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "evalworld assets: all installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "evalworld assets: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
