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

exec "$(dirname "$0")/apt-packages.sh" "${PACKAGES[@]}"
