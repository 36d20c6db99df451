"""Reading an input file with a limit on the bytes *read*, whatever kind of file it is.

``stat().st_size`` is the size of a regular file only: a FIFO, a ``<(...)`` process
substitution, a socket or a device such as ``/dev/zero`` says 0 and then gives bytes until
it ends, or never ends. A limit that compares ``st_size`` holds for none of them. So every
file an operator names (the agent's config, the descheduler's policy, ``--scheduler-config``,
a snapshot and its NodeReports, kubelet's config) is read here, in chunks, and refused as soon
as one byte more than the limit has been read. A regular file whose size is already over the
limit is refused unread; one within it is read in one call (one buffer, no copies).

The refusal names the file and the limit and says how to raise it (the caller knows: a flag,
or, for config files, that the limit is fixed): a file over the limit is not made readable by
asking for less.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agent.config.errors import ConfigError, FieldError

MAX_CONFIG_BYTES = 4 * 2**20
"""4 MiB for a config or policy file: four times what a ConfigMap (where they usually come
from) can hold, and a thousand times a large real one."""
CONFIG_LIMIT_HINT = "the limit is fixed: no config comes near four times what a ConfigMap holds"
"""How to raise ``MAX_CONFIG_BYTES``: it is not raised (no real config comes near it)."""
_CHUNK = 4 * 2**20


def too_large(
    source: str, limit: int, hint: str, *, unread: bool = False, doing: str = "reading"
) -> ConfigError:
    """The refusal of ``source`` for holding more than ``limit`` bytes (read, or made by
    ``doing`` something else to it, such as gunzipping); ``hint`` says how to raise it."""
    how = "refused unread" if unread else f"refused after {doing} {limit} bytes"
    reason = f"larger than {limit} bytes: {how}; {hint}"
    return ConfigError(source, [FieldError("", reason)])


def read_limited(path: str | os.PathLike[str], limit: int, *, hint: str) -> bytes:
    """The bytes of the file at ``path``, or ``ConfigError`` once more than ``limit`` bytes
    have been read (or could not be read). ``limit`` must be at least 1."""
    if limit < 1:
        raise ValueError(f"a read limit must be at least 1 byte, not {limit}")  # caller's bug
    source = str(path)
    chunks: list[bytes] = []
    total = 0
    try:
        with Path(path).open("rb") as handle:
            facts = os.fstat(handle.fileno())
            regular = stat.S_ISREG(facts.st_mode)
            if regular and facts.st_size > limit:
                raise too_large(source, limit, hint, unread=True)
            # A regular file in one read of its size, plus a byte to see that it grew.
            want = facts.st_size + 1 if regular and facts.st_size else _CHUNK
            while chunk := handle.read(min(want, limit + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise too_large(source, limit, hint)
                want = _CHUNK
    except OSError as error:
        reason = f"cannot read: {error.strerror or error}"
        raise ConfigError(source, [FieldError("", reason)]) from None
    # ``join`` of one bytes object returns it as it is: a regular file is never copied.
    return b"".join(chunks)
