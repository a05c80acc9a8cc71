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

exec "$(dirname "$0")/apt-packages.sh" "${PACKAGES[@]}"
