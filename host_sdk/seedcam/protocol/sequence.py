"""Sequence numbers of received frames: loss, duplicates and replays, per channel (sans-IO).

Every sender numbers each channel's frames from 0 (:class:`~seedcam.protocol.framing.Encoder`);
a response echoes the number of its request. :class:`SequenceTracker` is what a
:class:`~seedcam.protocol.framing.Decoder` asks about each well-formed frame: deliver it, or
drop it as one already seen. The rules, for frames that are not responses, per channel:

==========================================  ===========  ==================================
the frame's number, against the highest     delivered    counted
seen on its channel (``high``)
==========================================  ===========  ==================================
the channel's first frame                   yes          -
``0`` (not the wrap after 65535)            yes          - (the sender started again)
ahead by ``d``, 1 <= d <= 32768             yes          ``d - 1`` in ``seq_lost``
equal to ``high``                           **no**       ``duplicates``
behind by < ``window``, seen before         **no**       ``duplicates`` (a replay)
behind by < ``window``, never seen          yes          - (a late frame)
any other (far behind)                      yes          - (the sender's counter restarted)
==========================================  ===========  ==================================

A response is dropped (and counted in ``duplicates``) when a response with its number
arrived on its channel among the last ``window`` responses; every request gets one answer.

Why drop them: the links seedcam runs on (a UART, USB, a pty, TCP) neither reorder nor
repeat frames, and no sender ever sends a number twice (a resent chunk or request gets a
new one), so a repeated number is a link or proxy fault or an injected frame. Delivering
it would run a request twice on the device and show a result twice on the host.

Why 0 and far-behind numbers restart the window: a peer can restart behind a port that
never closed (a UART) and number from 0 again; its frames must be heard at once, not
dropped as replays until its numbers pass the old ones. The price, on a link without
authentication: a replayed frame numbered 0, or one older than the window, is delivered
(it shows up as a jump in ``seq_lost``). Authenticated links (HMAC and a timestamp window)
are the defence against a deliberate replay; this window catches duplicates and naive
replays and makes every one of them visible in the counters.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["SEQ_MODULO", "SEQ_WINDOW", "SequenceTracker"]

SEQ_MODULO = 1 << 16
#: Numbers behind the highest one that are remembered, per channel (RFC 4303's anti-replay window size).
SEQ_WINDOW = 64
_HALF = SEQ_MODULO // 2


@dataclass
class _Window:
    high: int
    seen: int = 1  #: bit i set: number ``high - i`` was seen


class SequenceTracker:
    """Loss and duplicate tracking per channel; see the module docstring for the rules.

    Args:
        window: numbers remembered behind the highest one (0: no duplicate detection,
            loss counting only).
    """

    def __init__(self, window: int = SEQ_WINDOW) -> None:
        if window < 0:
            raise ValueError(f"the sequence window must be >= 0, got {window}")
        self.window = window
        self._windows: dict[int, _Window] = {}
        self._responses: dict[int, tuple[deque[int], set[int]]] = {}

    def reset(self) -> None:
        """Forget every number seen (the peer restarted)."""
        self._windows.clear()
        self._responses.clear()

    def accept(self, channel: int, seq: int, response: bool) -> tuple[bool, int]:
        """Whether to deliver a frame, and how many frames its number shows lost before it.

        Returns:
            ``(deliver, lost)``; ``deliver`` is False for a duplicate or a replay.
        """
        if response:
            return self._accept_response(channel, seq), 0
        window = self._windows.get(channel)
        if window is None or (seq == 0 and window.high != SEQ_MODULO - 1):
            self._windows[channel] = _Window(seq)
            return True, 0
        ahead = (seq - window.high) % SEQ_MODULO
        if 0 < ahead <= _HALF:
            window.seen = ((window.seen << ahead) | 1) & ((1 << self.window) - 1) if self.window else 1
            window.high = seq
            return True, ahead - 1
        if self.window == 0:
            if ahead != 0:
                self._windows[channel] = _Window(seq)
            return True, 0
        back = SEQ_MODULO - ahead if ahead else 0
        if back < self.window:
            bit = 1 << back
            if window.seen & bit:
                return False, 0  # the highest again (a duplicate), or an older one (a replay)
            window.seen |= bit  # a late frame
            return True, 0
        self._windows[channel] = _Window(seq)  # far behind: the sender's counter restarted
        return True, 0

    def _accept_response(self, channel: int, seq: int) -> bool:
        if self.window == 0:
            return True
        recent, members = self._responses.setdefault(channel, (deque(), set()))
        if seq in members:
            return False
        recent.append(seq)
        members.add(seq)
        if len(recent) > self.window:
            members.discard(recent.popleft())
        return True
