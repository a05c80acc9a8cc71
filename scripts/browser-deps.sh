#!/usr/bin/env bash
# The browser the viewer's browser tests drive (tests/view/test_view_browser.py): Debian's Chromium,
# launched by Playwright with executable_path=/usr/bin/chromium (never `playwright install`).
# Idempotent: a no-op when /usr/bin/chromium is there. Without root or apt it says why and exits 0;
# the browser tests then skip with that reason.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "browser-deps: /usr/bin/chromium is installed ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown'))"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "browser-deps: skipped: no apt-get on this system (install Chromium as /usr/bin/chromium yourself)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n)
    else
        echo "browser-deps: skipped: not root and no passwordless sudo (run: apt-get install -y chromium)"
        exit 0
    fi
else
    SUDO=()
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "browser-deps: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
