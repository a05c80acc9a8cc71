#!/usr/bin/env bash
# Debian font packages of the randomized TRAINING world (tools/seedcam_tools/world/assets.py).
# The independent evaluation world has its own (scripts/evalworld-assets.sh); the two share none.
# Licences: Bitstream Vera (DejaVu), SIL OFL (Liberation, Open Sans, Lato, Inconsolata, Hack,
# Linux Libertine), GPL with font exception (FreeFont), AGPL with font exception (URW base35),
# Apache 2.0 (Roboto).
set -euo pipefail

PACKAGES=(
  fonts-dejavu-core
  fonts-dejavu-extra
  fonts-liberation2
  fonts-freefont-ttf
  fonts-urw-base35
  fonts-roboto
  fonts-open-sans
  fonts-inconsolata
  fonts-linuxlibertine
  fonts-hack
  fonts-lato
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "world assets: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
