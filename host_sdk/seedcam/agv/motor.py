"""The motor interface the controller drives: a simulated vehicle and a serial motor controller implement it."""

from __future__ import annotations

import abc
from types import TracebackType

from seedcam.agv.config import DriveCommand

__all__ = ["Motor"]


class Motor(abc.ABC):
    """Where drive commands go. Implement :meth:`drive` and :meth:`close`.

    A motor that measures its wheels reports :meth:`odometer_m` and
    :meth:`speed_mps`; the controller then uses them instead of its own
    integration of the commands it sent.
    """

    @abc.abstractmethod
    def drive(self, command: DriveCommand) -> None:
        """Apply ``command`` now.

        Raises:
            SensorError: the motor controller cannot be reached (e.g. ``LinkBroken``, ``SensorTimeout``).
        """

    def stop(self) -> None:
        """Throttle 0, wheels straight."""
        self.drive(DriveCommand(0.0, 0.0, "stop"))

    def odometer_m(self) -> float | None:
        """Distance driven since start, metres, or None when the motor does not measure it."""
        return None

    def speed_mps(self) -> float | None:
        """Measured speed, m/s, or None when the motor does not measure it."""
        return None

    @abc.abstractmethod
    def close(self) -> None:
        """Stop and release the motor. Idempotent."""

    def __enter__(self) -> Motor:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
