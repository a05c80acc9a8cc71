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
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Mosquitto:
    """One mosquitto process with the three listeners; :meth:`restart` keeps the ports.

    Attributes:
        plain_port, auth_port, tls_port: the listeners' ports on 127.0.0.1.
        ca_file: the test CA that signed the TLS listener's certificate.
    """

    def __init__(self, folder: Path, *, persistence: bool = False) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.plain_port, self.auth_port, self.tls_port = free_port(), free_port(), free_port()
        self.ca_file, cert, key = make_test_certificates(folder, "seedcam fleet test CA")
        passwords = folder / "passwords"
        passwords.write_text("")
        subprocess.run(
            [_tool("mosquitto_passwd"), "-b", str(passwords), USERNAME, PASSWORD], check=True, capture_output=True
        )
        passwords.chmod(0o600)
        lines = [
            "per_listener_settings true",
            f"persistence {'true' if persistence else 'false'}",
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
            f"password_file {passwords}",
            f"listener {self.tls_port} 127.0.0.1",
            "allow_anonymous true",
            f"cafile {self.ca_file}",
            f"certfile {cert}",
            f"keyfile {key}",
        ]
        self.config = folder / "mosquitto.conf"
        self.config.write_text("\n".join(lines) + "\n")
        self.log = folder / "mosquitto.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The anonymous listener's ``mqtt://`` URL."""
        return f"mqtt://127.0.0.1:{self.plain_port}"

    def start(self) -> Mosquitto:
        """Start the broker and wait until all three listeners accept connections."""
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                [_tool("mosquitto"), "-c", str(self.config)], stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + _START_S
        for port in (self.plain_port, self.auth_port, self.tls_port):
            while True:
                if self._process.poll() is not None:
                    raise RuntimeError(f"mosquitto exited at start: {self.log.read_text(errors='replace')[-2000:]}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"mosquitto did not listen on {port} within {_START_S} s") from None
                    time.sleep(0.02)  # polling a listening socket with a deadline
        return self

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
