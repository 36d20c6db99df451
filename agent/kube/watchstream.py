"""The events of one open watch, decoded line by line from its response.

Why apart from the transport: a watch answer is not read once and released like the
others; it is iterated for minutes by a reflector's own thread, and must be stoppable from
another thread at once (a reflector told to stop, a reconnect). That is this module's one
concern; ``KubeApi.watch`` opens the response.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator

import urllib3

from agent.kube.errors import Timeout, Unavailable
from agent.kube.jsontypes import Decode, JsonObject

UNDECODABLE = "UNDECODABLE"
"""The type of a watch event whose line did not decode (see ``WatchStream``)."""


class WatchStream:
    """Decoded watch events from one response.

    Concurrency: the thread that iterates owns the response and closes it when it is done.
    ``close`` may be called from any other thread: it only shuts the socket down for
    reading, which wakes the blocked reader at once (a plain close from another thread would
    wait for the reader's buffer lock, i.e. for the next event or bookmark, and could tear
    the response down under the reader's feet).
    """

    def __init__(self, raw: urllib3.BaseHTTPResponse, decode: Decode = json.loads) -> None:
        self._raw = raw
        self._decode = decode
        self._lock = threading.Lock()
        self._reader: int | None = None
        self.closed = False

    def __iter__(self) -> Iterator[JsonObject]:
        with self._lock:
            self._reader = threading.get_ident()
        buffer = b""
        try:
            for chunk in self._raw.stream(65536, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield self._decode_whole(line)
            if buffer.strip():
                yield self._decode(buffer)  # a line cut short: the stream broke
        except (urllib3.exceptions.TimeoutError, TimeoutError) as error:
            if not self.closed:
                raise Timeout(f"watch read timed out: {error}") from error
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as error:
            if not self.closed:
                raise Unavailable(f"watch stream broke: {error}") from error
        finally:
            with self._lock:
                self._reader = None
            self._release()

    def _decode_whole(self, line: bytes) -> JsonObject:
        """One complete event line; one that does not decode (an object nested too deep
        to read, say) is handed on as ``UNDECODABLE`` for the reader to skip and count:
        reconnecting would only read it again."""
        try:
            return self._decode(line)  # type: ignore[no-any-return]  # a decoder returns an event
        except (ValueError, RecursionError) as error:
            return {"type": UNDECODABLE, "object": {}, "error": f"{type(error).__name__}: {error}"}

    def close(self) -> None:
        with self._lock:
            self.closed = True
            reading_elsewhere = self._reader not in (None, threading.get_ident())
        if reading_elsewhere:
            # Wake the reader; it releases the response itself. Nothing to do if the
            # connection is already gone.
            with contextlib.suppress(ValueError, RuntimeError, OSError):
                self._raw.shutdown()
        else:
            self._release()

    def _release(self) -> None:
        # Closing a broken stream has nothing left to report.
        with contextlib.suppress(urllib3.exceptions.HTTPError, OSError):
            self._raw.close()
