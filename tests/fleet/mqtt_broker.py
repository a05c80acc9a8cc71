"""A real mosquitto broker for the fleet tests: its own config in a folder, on 127.0.0.1 at free ports.

Three listeners: ``plain`` (anonymous), ``auth`` (a password file: :data:`USERNAME` /
:data:`PASSWORD`) and ``tls`` (a server certificate signed by a CA made here with
``cryptography``; anonymous, so a test checks the TLS alone). No persistence unless asked
for (the broker-restart test keeps its consumer's session across the restart). The system
service is never involved; ``scripts/mosquitto-deps.sh`` installs the binaries.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tls_certs import make_test_certificates

__all__ = ["PASSWORD", "USERNAME", "Mosquitto", "free_port", "mosquitto_missing"]

USERNAME = "fleet"
PASSWORD = "s3cret-fleet"
_START_S = 10.0
_PORT_TRIES = 5  # fresh ports when another process took one between picking it and the broker's bind


def mosquitto_missing() -> str:
    """Why the broker cannot run here ('' when it can)."""
    for tool in ("mosquitto", "mosquitto_passwd"):
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            return f"{tool} is not installed (scripts/mosquitto-deps.sh installs it where root and apt-get allow)"
    return ""


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that nothing listens on right now.

    The sockets are held open together while the kernel picks, so no port comes back twice
    (one picked, closed and picked again would make the broker's second listener fail).
    """
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class _PortTaken(Exception):
    """The broker exited at start because one of its ports was in use."""


class Mosquitto:
    """One mosquitto process with the three listeners; :meth:`restart` keeps the ports.

    Attributes:
        plain_port, auth_port, tls_port: the listeners' ports on 127.0.0.1.
        ca_file: the test CA that signed the TLS listener's certificate.
    """

    def __init__(self, folder: Path, *, persistence: bool = False) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.plain_port, self.auth_port, self.tls_port = free_ports(3)
        self.ca_file, self._cert, self._key = make_test_certificates(folder, "seedcam fleet test CA")
        self._passwords = folder / "passwords"
        self._passwords.write_text("")
        subprocess.run(
            [_tool("mosquitto_passwd"), "-b", str(self._passwords), USERNAME, PASSWORD],
            check=True,
            capture_output=True,
        )
        self._passwords.chmod(0o600)
        self._persistence = persistence
        self.config = folder / "mosquitto.conf"
        self.log = folder / "mosquitto.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._started_once = False
        self._write_config()

    def _write_config(self) -> None:
        folder = self.folder
        lines = [
            "per_listener_settings true",
            f"persistence {'true' if self._persistence else 'false'}",
            f"persistence_location {folder}/",
            "user root",  # started as root (CI): stay root so the files here stay readable
            "log_dest stderr",
            "log_type error",
            "log_type warning",
            "max_queued_messages 10000",
            f"listener {self.plain_port} 127.0.0.1",
            "allow_anonymous true",
            f"listener {self.auth_port} 127.0.0.1",
            "allow_anonymous false",
            f"password_file {self._passwords}",
            f"listener {self.tls_port} 127.0.0.1",
            "allow_anonymous true",
            f"cafile {self.ca_file}",
            f"certfile {self._cert}",
            f"keyfile {self._key}",
        ]
        self.config.write_text("\n".join(lines) + "\n")

    @property
    def url(self) -> str:
        """The anonymous listener's ``mqtt://`` URL."""
        return f"mqtt://127.0.0.1:{self.plain_port}"

    def start(self) -> Mosquitto:
        """Start the broker and wait until all three listeners accept connections.

        At the first start a port taken by another process since it was picked is no failure:
        the broker gets fresh ports and starts again. A restart keeps its ports (clients
        reconnect to them), so there a taken port is an error.
        """
        for attempt in range(_PORT_TRIES):
            try:
                self._start_on_current_ports()
            except _PortTaken:
                if self._started_once or attempt == _PORT_TRIES - 1:
                    raise RuntimeError(f"mosquitto could not bind its ports: {self._log_tail()}") from None
                self.plain_port, self.auth_port, self.tls_port = free_ports(3)
                self._write_config()
                continue
            self._started_once = True
            return self
        raise AssertionError("unreachable")  # the loop returns or raises

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def _start_on_current_ports(self) -> None:
        log_start = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                [_tool("mosquitto"), "-c", str(self.config)], stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + _START_S
        for port in (self.plain_port, self.auth_port, self.tls_port):
            while True:
                if self._process.poll() is not None:
                    self._process = None
                    if "Address already in use" in self.log.read_text(errors="replace")[log_start:]:
                        raise _PortTaken
                    raise RuntimeError(f"mosquitto exited at start: {self._log_tail()}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"mosquitto did not listen on {port} within {_START_S} s") from None
                    time.sleep(0.02)  # polling a listening socket with a deadline

    def stop(self) -> None:
        """Stop the broker (SIGTERM: it saves its persistence file when it has one). Idempotent."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def restart(self) -> None:
        """Stop the broker and start it again on the same ports."""
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None
