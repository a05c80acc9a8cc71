#!/usr/bin/env bash
# Install what the fleet tests need (tests/fleet): the mosquitto MQTT broker and its command-line clients.
# The tests start their own broker on 127.0.0.1 at a free port; the system service is never used: when the
# package starts it, it is stopped and disabled again. A no-op once the binaries are there; without root and
# apt-get it says so in one line and the fleet tests skip with that reason.
set -euo pipefail
if command -v mosquitto >/dev/null && command -v mosquitto_passwd >/dev/null && command -v mosquitto_sub >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "mosquitto-deps: mosquitto not installed (needs root and apt-get); the fleet tests will skip" >&2
  exit 0
fi
echo "mosquitto-deps: installing mosquitto mosquitto-clients" >&2
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    mosquitto mosquitto-clients >/dev/null; }; then
  echo "mosquitto-deps: could not install mosquitto; the fleet tests will skip" >&2
  exit 0
fi
# The package may start the system broker on port 1883: the tests want none of it.
if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
  systemctl disable --now mosquitto >/dev/null 2>&1 || true
elif command -v service >/dev/null; then
  service mosquitto stop >/dev/null 2>&1 || true
fi
