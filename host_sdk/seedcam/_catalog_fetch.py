"""Bounded reads of catalog files from a ``file://`` folder (or a plain path) or an ``https://`` server.

Only the standard library: :mod:`urllib.request` with the default TLS context (the system's CA
store, or the file ``$SSL_CERT_FILE`` names), a timeout on every request, and a byte limit on
every read, so a server that sends more than the catalog says, or never stops, costs at most
``limit + 1`` bytes and ``timeout`` seconds of silence. Plain ``http://`` is refused: a catalog
travels over TLS or comes from a local folder.
"""

from __future__ import annotations

import logging
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from seedcam.errors import CatalogError

__all__ = ["SCHEMES", "join_url", "normalise_url", "read_url"]

log = logging.getLogger(__name__)

#: the URL schemes a catalog and its bundles may come from
SCHEMES = ("file", "https")
_PIECE = 1 << 16


def normalise_url(url: str) -> str:
    """A catalog location as a URL: a plain path becomes ``file://``; other schemes are refused.

    Raises:
        CatalogError: an empty location, or a scheme other than ``file`` and ``https``.
    """
    text = url.strip()
    if not text:
        raise CatalogError("no catalog URL given")
    scheme = urllib.parse.urlsplit(text).scheme.lower()
    if not scheme or (len(scheme) == 1 and text[1:2] == ":"):  # a path (or a Windows drive letter)
        return Path(text).expanduser().resolve().as_uri()
    if scheme == "http":
        raise CatalogError(f"{text}: plain http is not allowed for a catalog; use https:// or a file:// folder")
    if scheme not in SCHEMES:
        raise CatalogError(f"{text}: unsupported catalog URL scheme {scheme!r} (use https:// or file://)")
    return text


def join_url(base: str, reference: str) -> str:
    """``reference`` (a relative path or a URL) resolved against the URL of the file that names it.

    Raises:
        CatalogError: the result has another scheme than ``file`` or ``https``, or an https catalog
            names a local file.
    """
    joined = urllib.parse.urljoin(base, reference)
    scheme = urllib.parse.urlsplit(joined).scheme.lower()
    if scheme not in SCHEMES:
        raise CatalogError(f"{reference!r}: a catalog file must be a relative path, https:// or file:// URL")
    if scheme == "file" and urllib.parse.urlsplit(base).scheme.lower() != "file":
        raise CatalogError(f"{reference!r}: a catalog on {base} may not name a local file")
    return joined


def read_url(
    url: str,
    *,
    limit: int,
    timeout: float,
    what: str,
    progress: Callable[[int], None] | None = None,
) -> bytes:
    """The bytes at ``url``: at most ``limit`` of them.

    Args:
        url: a ``file://`` or ``https://`` URL.
        limit: the most bytes accepted; one more is an error.
        timeout: seconds each network operation may wait.
        what: what the file is, for messages (``"catalog.json"``, ``"bundle lane-v3@3.0.0"``).
        progress: called with the bytes read so far after each piece.

    Raises:
        CatalogError: the file is missing or unreadable, larger than ``limit``, the server
            answered an error, TLS failed or the connection timed out.
    """
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    try:
        if scheme == "file":
            path = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
            with path.open("rb") as fh:
                return _bounded(fh, url, limit, what, progress)
        if scheme != "https":
            raise CatalogError(f"{url}: unsupported URL scheme for {what} (use https:// or file://)")
        context = ssl.create_default_context()
        request = urllib.request.Request(url, headers={"User-Agent": "seedcam-catalog"})
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:  # noqa: S310
            length = response.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) > limit:
                raise CatalogError(f"{what} at {url} is {int(length)} bytes, more than the {limit} allowed")
            return _bounded(response, url, limit, what, progress)
    except CatalogError:
        raise
    except FileNotFoundError as exc:
        raise CatalogError(f"{what} not found: {url}") from exc
    except urllib.error.HTTPError as exc:
        raise CatalogError(f"{what} at {url}: the server answered HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise CatalogError(f"{what} at {url}: {_reason(exc.reason)}") from exc
    except TimeoutError as exc:
        raise CatalogError(f"{what} at {url}: no answer within {timeout:g} s") from exc
    except (OSError, ValueError) as exc:
        raise CatalogError(f"{what} at {url}: {_reason(exc)}") from exc


def _bounded(fh: BinaryIO, url: str, limit: int, what: str, progress: Callable[[int], None] | None) -> bytes:
    data = bytearray()
    while True:
        piece = fh.read(min(_PIECE, limit + 1 - len(data)))
        if not piece:
            break
        data += piece
        if len(data) > limit:
            raise CatalogError(f"{what} at {url} is larger than the {limit} bytes allowed")
        if progress is not None:
            progress(len(data))
    log.debug("read %d bytes of %s from %s", len(data), what, url)
    return bytes(data)


def _reason(reason: object) -> str:
    if isinstance(reason, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted ({reason.verify_message})"
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__
