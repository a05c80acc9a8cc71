#!/usr/bin/env bash
# Debian font packages of the randomized TRAINING world (tools/seedcam_tools/world/assets.py, FONT_DIRS).
# The independent evaluation world has its own (scripts/evalworld-assets.sh); the two share none.
# Licences, all free: SIL OFL (most of the families below), Bitstream Vera (DejaVu), Apache 2.0 (Roboto,
# Roboto Slab, Clear Sans), GPL with font exception (FreeFont, Tiresias, Oxygen), AGPL with font exception
# (URW base35), GPL/MIT (Roadgeek 2014, Agave, Beteckna), public domain (OCR-A, OCR-B, Tuffy, Goudy
# Bookletter 1911); each package's /usr/share/doc/<package>/copyright is authoritative.
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
  # road-sign and plate lettering
  fonts-roadgeek
  fonts-opendin
  fonts-tiresias
  fonts-national-park
  fonts-beteckna
  fonts-routed-gothic
  fonts-ocr-a
  fonts-ocr-b
  # condensed
  fonts-yanone-kaffeesatz
  fonts-bebas-neue
  fonts-league-spartan
  fonts-paratype
  # sans
  fonts-cantarell
  fonts-cabin
  fonts-karla
  fonts-manrope
  fonts-clear-sans
  fonts-tuffy
  fonts-play
  fonts-jura
  fonts-dosis
  fonts-sora
  fonts-oxygen
  fonts-comfortaa
  fonts-quicksand
  # serif and slab
  fonts-vollkorn
  fonts-cardo
  fonts-roboto-slab
  fonts-courier-prime
  fonts-oldstandard
  fonts-quattrocento
  fonts-sil-charis
  fonts-goudybookletter
  fonts-prociono
  # mono
  fonts-league-mono
  fonts-jetbrains-mono
  fonts-firacode
  fonts-mononoki
  fonts-anonymous-pro
  fonts-monofur
  fonts-3270
  fonts-agave
  fonts-hermit
)

exec "$(dirname "$0")/apt-packages.sh" "${PACKAGES[@]}"
