"""One push into the device's update service, in a process that ``$SEEDCAM_FW_CRASH_AT`` kills part-way.

The test that runs it cuts the power (SIGKILL, no clean-up of any kind) at a named storage step,
then boots a fresh update service on the same folder and checks what survived::

    python power_cut_child.py UPDATES_DIR BUNDLE_FILE [--no-activate]
    python power_cut_child.py UPDATES_DIR --activate GROUP SLOT

It exits 0 when it was not killed and writes the last answer's reason (``ok`` for none) to stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from update_helpers import call, push, service

from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import read_bundle


def main(argv: list[str]) -> int:
    updates = service(Path(argv[0]))
    try:
        if argv[1] == "--activate":
            answer = call(updates, pb.UpdateRequest(activate=pb.SlotRequest(name=argv[2], slot=argv[3])))
        else:
            answer = push(updates, read_bundle(argv[1]), activate="--no-activate" not in argv)
    finally:
        updates.close()
    sys.stdout.write(f"{answer.reason or 'ok'}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
