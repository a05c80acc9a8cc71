"""The transfer journal: what is being received, and how much of it is intact.

Two files in the staging folder:

* ``journal.json`` (atomic writes): the bundle's header and signature, and the
  state (``receiving`` or ``stored``);
* ``payload.part``: the payload bytes received so far, written in place.

The resume point is never trusted from a counter: it is recomputed from the
part file by checking each block against the header's per-block hashes, so a
write torn by a power cut or a kill costs at most the blocks it touched. While
receiving, every block is checked as it completes; a block that does not match
(a corrupted chunk that got past the link's CRC) is cut off again and the
sender is told to resend from its start.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
from pathlib import Path

from seedcam.bundle import BundleHeader
from seedcam.errors import BundleError
from seedcam_firmware.storage.atomic import cleanup_temp, fsync_dir, write_json_atomically

__all__ = ["TransferJournal"]

log = logging.getLogger(__name__)

_SYNC_EVERY = 256 * 1024  # bytes between fsyncs of the part file while receiving


class TransferJournal:
    """The one transfer in progress (or none) in ``folder``.

    Args:
        folder: the staging folder (created if missing).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        cleanup_temp(self.folder)
        self.header: BundleHeader | None = None
        self.signature = b""
        self.state = ""
        self.next_offset = 0
        self._block = hashlib.sha256()
        self._unsynced = 0
        self._load()

    @property
    def journal_path(self) -> Path:
        return self.folder / "journal.json"

    @property
    def part_path(self) -> Path:
        return self.folder / "payload.part"

    # ------------------------------------------------------------------ lifecycle

    def _load(self) -> None:
        try:
            raw = json.loads(self.journal_path.read_text())
            header = BundleHeader.parse(base64.b64decode(raw["header"]))
            signature = base64.b64decode(raw.get("signature", ""))
            state = str(raw["state"])
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, BundleError) as exc:
            log.warning("transfer journal unreadable (%s); discarding it", exc)
            self.clear()
            return
        self.header, self.signature, self.state = header, signature, state
        self.next_offset = self._verified_length()

    def matches(self, header: BundleHeader) -> bool:
        """True when the journal holds a transfer of exactly this bundle header."""
        return self.header is not None and self.header.raw == header.raw

    def start(self, header: BundleHeader, signature: bytes) -> bool:
        """Begin receiving ``header``'s payload; keep the intact data of the same bundle.

        Returns:
            True when an earlier transfer of the same bundle was resumed.
        """
        if self.matches(header) and self.part_path.exists():
            if signature != self.signature:  # re-signed (e.g. another key): a resume after a restart must see it
                self.signature = signature
                self._write_journal()
            self.next_offset = self._verified_length()
            self._reset_block()
            return True
        self.clear()
        with self.part_path.open("wb") as fh:
            os.fsync(fh.fileno())
        self.header, self.signature, self.state = header, signature, "receiving"
        self._write_journal()
        self.next_offset = 0
        self._reset_block()
        return False

    def clear(self) -> None:
        """Forget the transfer and delete its files."""
        self.journal_path.unlink(missing_ok=True)
        self.part_path.unlink(missing_ok=True)
        fsync_dir(self.folder)
        self.header, self.signature, self.state, self.next_offset = None, b"", "", 0

    def _write_journal(self) -> None:
        assert self.header is not None
        write_json_atomically(
            self.journal_path,
            {
                "header": base64.b64encode(self.header.raw).decode(),
                "signature": base64.b64encode(self.signature).decode(),
                "state": self.state,
                "sha256": self.header.sha256,
            },
        )

    # ------------------------------------------------------------------ data

    @property
    def complete(self) -> bool:
        """Every payload byte is stored and verified."""
        return self.header is not None and self.next_offset == self.header.size

    def write(self, offset: int, data: bytes) -> bool:
        """Store a chunk that starts at ``offset``; returns False when a block failed its hash.

        Chunks before :attr:`next_offset` are already stored (ignored); chunks after
        it leave a gap and are ignored too: the sender resends from :attr:`next_offset`.
        """
        header = self.header
        if header is None:
            raise BundleError("no transfer in progress")
        if offset != self.next_offset or not data:
            return True
        data = data[: header.size - offset]
        ok = True
        with self.part_path.open("r+b") as fh:
            fh.seek(offset)
            position = offset
            view = memoryview(data)
            while view:
                block_start, block_end = header.block_range(position // header.block_size)
                take = min(len(view), block_end - position)
                fh.write(view[:take])
                self._block.update(view[:take])
                position += take
                view = view[take:]
                if position == block_end:
                    if self._block.hexdigest() != header.block_hashes[block_start // header.block_size]:
                        fh.truncate(block_start)
                        position, ok = block_start, False
                        self._block = hashlib.sha256()
                        break
                    self._block = hashlib.sha256()
            self.next_offset = position
            self._unsynced += len(data)
            if self._unsynced >= _SYNC_EVERY or self.complete:
                fh.flush()
                os.fsync(fh.fileno())
                self._unsynced = 0
        return ok

    def mark_stored(self) -> None:
        """Record that the whole payload is stored and verified (after its sha256 check)."""
        self.state = "stored"
        self._write_journal()

    def payload_sha256(self) -> str:
        """sha256 of the stored payload, read back from storage."""
        digest = hashlib.sha256()
        with self.part_path.open("rb") as fh:
            while piece := fh.read(1 << 20):
                digest.update(piece)
        return digest.hexdigest()

    def read(self, offset: int, size: int) -> bytes:
        """Bytes of the stored payload."""
        with self.part_path.open("rb") as fh:
            fh.seek(offset)
            return fh.read(size)

    def _reset_block(self) -> None:
        self._block = hashlib.sha256()
        if self.header is not None and self.next_offset % self.header.block_size:
            # resumed inside a block (a reconnect without a restart): rehash its start from storage
            start = self.next_offset - self.next_offset % self.header.block_size
            self._block.update(self.read(start, self.next_offset - start))

    def _verified_length(self) -> int:
        """Length of the leading run of blocks in the part file that match their hashes; cuts off the rest."""
        header = self.header
        assert header is not None
        length = 0
        try:
            with self.part_path.open("r+b") as fh:
                for index, expected in enumerate(header.block_hashes):
                    start, end = header.block_range(index)
                    fh.seek(start)
                    data = fh.read(end - start)
                    if len(data) != end - start or hashlib.sha256(data).hexdigest() != expected:
                        break
                    length = end
                fh.truncate(length)
        except FileNotFoundError:
            return 0
        return length
