"""IdFileGenerator: Snowflake IDs issued in this process under the claim that
nodeid-broker writes to its id file (--id-file), by the rules of
clients/README.md ("What IdFileGenerator does for you")."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, List, NamedTuple, Optional, Tuple, Union

from . import _snowflake as sf
from .errors import ClockBehindError, NodeIdError, NotHeldError, VersionChangedError

# Looked up at call time, so that tests can drive time by hand.
_monotonic = time.monotonic
_sleep = time.sleep

#: The testing-only rule breakers of CONFORMANCE.md, each breaking one rule.
MUTATIONS = frozenset({"ignore-valid-until", "ignore-floor", "ignore-version",
                       "ignore-missing", "allow-backwards"})

_MISSING = "missing: the broker holds no node ID now (or has not written the file yet)"
_FIELDS = (("nodeId", "node_id"), ("version", "version"),
           ("floorMs", "floor_ms"), ("validUntilMs", "valid_until_ms"))


@dataclass(frozen=True)
class Claim:
    """One reading of the id file: the node ID, its version (the fencing
    token), the floor (issue only timestamps above it) and when the claim stops
    being usable (issue only timestamps below it); times in Unix ms on the
    host's clock."""

    node_id: int
    version: int
    floor_ms: int
    valid_until_ms: int


class Batch(NamedTuple):
    """The IDs of one next_batch call and what they were issued under: the
    node ID they carry and its version (the fencing token), and from
    IdFileGenerator the claim every ID was issued under (each ID's timestamp
    is above its floor_ms and below its valid_until_ms); None from
    HttpGenerator, whose broker fences its IDs itself."""

    ids: List[int]
    node_id: int
    version: int
    claim: Optional[Claim]


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key appears twice")
    return dict(pairs)


def parse(data: bytes) -> Claim:
    """Returns the Claim in an id file's bytes. Raises ValueError with the
    reason unless they are a JSON object whose nodeId, version, floorMs and
    validUntilMs are non-negative integers (not booleans or floats), nodeId
    below 1024, each key once; other keys are ignored."""
    if not data.strip():
        raise ValueError("empty (truncated?)")
    try:
        doc = json.loads(data, object_pairs_hook=_no_duplicates,
                         parse_constant=lambda c: float("nan"))
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"not JSON (truncated?): {e}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"not a JSON object but {type(doc).__name__}")
    values = {}
    for key, attr in _FIELDS:
        if key not in doc:
            raise ValueError(f"{key} is missing")
        v = doc[key]
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{key} is not an integer: {json.dumps(v)[:40]}")
        if v < 0:
            raise ValueError(f"{key} is negative: {v}")
        values[attr] = v
    if values["node_id"] >= sf.MAX_NODES:
        raise ValueError(f"nodeId {values['node_id']} is not below {sf.MAX_NODES}")
    return Claim(**values)


class IdFileGenerator:
    """Issues Snowflake IDs in this process with the node ID the broker's id
    file names, keeping the rules of clients/README.md:

    1. an ID only while the file names a claim and its timestamp is below the
       claim's valid_until_ms;
    2. the file is re-read when the last reading is `reread` seconds old on
       the monotonic clock (and at once while it held no usable claim);
    3. VersionChangedError for good once the file names another nodeId or
       version than the first claim used;
    4. timestamps above floor_ms and never below its own last; 4096 IDs per
       millisecond, then it waits for the next; a clock behind the floor or
       its last timestamp is waited for up to max_clock_wait seconds, then
       ClockBehindError;
    5. NotHeldError (with the path and the reason) while the file is missing,
       truncated or garbage, or its claim expired; it issues again once a
       valid file for the same claim is back;
    6. thread-safe (one lock);
    7. next_ids(n) returns n strictly increasing IDs or raises.

    clock returns the host's wall clock in Unix ms as an int (the clock the
    broker stamps validUntilMs with); default time.time_ns() // 1_000_000.

    _mutation is for testing only (the conformance suite): one name of
    MUTATIONS breaks that rule on purpose. Never set it in production.
    """

    def __init__(self, path: str, *, clock: Optional[Callable[[], int]] = None,
                 reread: float = 1.0, max_clock_wait: float = 5.0,
                 _mutation: Optional[str] = None):
        if _mutation is not None and _mutation not in MUTATIONS:
            raise ValueError(f"unknown mutation {_mutation!r}: want one of {sorted(MUTATIONS)}")
        self._path = os.fspath(path)
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)
        self._reread = reread
        self._max_clock_wait = max_clock_wait
        self._mutation = _mutation
        self._lock = threading.Lock()
        self._reading: Union[Claim, str, None] = None  # a Claim or why not
        self._read_at = 0.0  # monotonic time of the reading
        self._used: Optional[Claim] = None  # the last claim used: its (node, version) are pinned
        self._changed: Optional[str] = None  # set for good on a version change
        self._last_ts = 0  # Unix ms of the last ID issued
        self._next_seq = 0  # the next free sequence number at _last_ts

    def next_id(self) -> int:
        """Returns a new ID, or raises NotHeldError, VersionChangedError or
        ClockBehindError."""
        return self._one()[1]

    def next_ids(self, n: int) -> List[int]:
        """Returns n (1 to 10000) new strictly increasing IDs, all issued or
        none: raises like next_id, ValueError or TypeError for a bad n."""
        sf.check_count(n)
        return self._issue(n)[1]

    def next_batch(self, n: int) -> Batch:
        """Returns n (1 to 10000) new strictly increasing IDs with the claim
        they were issued under; raises like next_ids."""
        sf.check_count(n)
        claim, ids = self._issue(n)
        return Batch(ids, claim.node_id, claim.version, claim)

    def claim(self) -> Claim:
        """Returns the claim IDs are issued under now, re-reading the file if
        due; raises NotHeldError or VersionChangedError like next_id."""
        with self._lock:
            claim, fresh = self._current()
            while True:
                ts = self._timestamp(self._clock())
                if self._in_time(claim, ts):
                    break
                if fresh:
                    raise self._expired(claim, ts)
                claim, fresh = self._current(force=True)  # a renewal may be in the file
            self._used = claim
            return claim

    # -- internals ---------------------------------------------------------

    def _one(self) -> Tuple[Claim, int]:
        """next_id with the claim the ID was issued under, for the driver."""
        with self._lock:
            # The common case in few steps: the claim last used is the reading,
            # which is fresh, and the timestamp is within it with a sequence
            # number left. Anything else takes _issue, which owns the rules.
            c = self._reading
            if c is self._used and c is not None and self._mutation is None and \
                    _monotonic() - self._read_at < self._reread:
                now, ts = self._clock(), self._last_ts
                seq = 0 if now > ts else self._next_seq
                if now > ts:
                    ts = now
                if c.floor_ms < ts < c.valid_until_ms and seq < sf.SEQ_PER_MS \
                        and sf.EPOCH_MS <= ts <= sf.MAX_TIME_MS:
                    self._last_ts, self._next_seq = ts, seq + 1
                    return c, ((ts - sf.EPOCH_MS) << 22) | (c.node_id << 12) | seq
        claim, ids = self._issue(1)
        return claim, ids[0]

    def _issue(self, n: int) -> Tuple[Claim, List[int]]:
        """Issues n IDs under one claim and returns it with them: the driver
        reports the claim a batch was issued under without a second reading."""
        with self._lock:
            ts, seq = self._last_ts, self._next_seq
            ids: List[int] = []
            deadline = None
            force = False
            while True:
                claim, fresh = self._current(force)
                force = False
                t = self._timestamp(self._clock(), ts)
                if t != ts:
                    ts, seq = t, 0
                low = sf.EPOCH_MS if self._mutation == "ignore-floor" else max(sf.EPOCH_MS, claim.floor_ms + 1)
                if ts < low:
                    deadline = self._wait(low, deadline, f"the floor {low - 1}")
                    continue
                if seq >= sf.SEQ_PER_MS:
                    deadline = self._wait(ts + 1, deadline, f"the last timestamp {ts}, whose sequence is used up")
                    continue
                if not self._in_time(claim, ts):
                    if fresh:
                        raise self._expired(claim, ts)
                    force = True  # a renewal may be in the file already
                    continue
                if ts > sf.MAX_TIME_MS:
                    raise NodeIdError(f"nodeid: the timestamp {ts} is past the layout's last millisecond")
                k = min(n - len(ids), sf.SEQ_PER_MS - seq)
                first = sf.base(ts, claim.node_id) + seq
                if k == 1:
                    ids.append(first)
                else:
                    ids.extend(range(first, first + k))
                seq += k
                if len(ids) == n:
                    self._used = claim
                    self._last_ts, self._next_seq = ts, seq
                    return claim, ids

    def _timestamp(self, now: int, last: Optional[int] = None) -> int:
        """The timestamp to issue at clock reading now: never below last (by
        default the last one issued)."""
        if last is None:
            last = self._last_ts
        if self._mutation == "allow-backwards":
            return now
        return now if now > last else last

    def _in_time(self, claim: Claim, ts: int) -> bool:
        return ts < claim.valid_until_ms or self._mutation == "ignore-valid-until"

    def _expired(self, claim: Claim, ts: int) -> NotHeldError:
        return NotHeldError(
            f"nodeid: id file {self._path}: the claim of node {claim.node_id} version "
            f"{claim.version} expired at {claim.valid_until_ms} (timestamp {ts}): the "
            f"broker has not renewed it")

    def _wait(self, target: int, deadline: Optional[float], behind: str) -> float:
        """Sleeps a little towards the clock reaching Unix ms target, and
        returns the deadline of the wait; ClockBehindError once past it."""
        now_mono = _monotonic()
        if deadline is None:
            deadline = now_mono + self._max_clock_wait
        elif now_mono >= deadline:
            raise ClockBehindError(
                f"nodeid: the clock ({self._clock()} Unix ms) stayed behind {behind} "
                f"for {self._max_clock_wait:g} s")
        gap_ms = target - self._clock()
        # Sleep to about a millisecond short of target, then in 0.1 ms steps:
        # never a busy spin, never past the next re-read for long.
        _sleep(min(max((gap_ms - 1) / 1000, 0.0001), 0.05, max(deadline - now_mono, 0)))
        return deadline

    def _current(self, force: bool = False) -> Tuple[Claim, bool]:
        """Returns the claim to issue under and whether it was read just now,
        re-reading the file when forced, when the reading is `reread` old, or
        when it held no claim. Raises NotHeldError or VersionChangedError."""
        if self._changed is not None:
            raise VersionChangedError(self._changed)
        fresh = False
        if force or not isinstance(self._reading, Claim) or _monotonic() - self._read_at >= self._reread:
            self._reading, self._read_at = self._read(), _monotonic()
            fresh = True
        reading = self._reading
        if not isinstance(reading, Claim):
            if reading is _MISSING and self._mutation == "ignore-missing" and self._used is not None:
                return self._used, fresh
            raise NotHeldError(f"nodeid: id file {self._path}: {reading}")
        used = self._used
        if used is not None and (reading.node_id, reading.version) != (used.node_id, used.version) \
                and self._mutation != "ignore-version":
            self._changed = (
                f"nodeid: id file {self._path} names node {reading.node_id} version "
                f"{reading.version}, but this generator used node {used.node_id} "
                f"version {used.version}: it stops for good; start a new one")
            raise VersionChangedError(self._changed)
        return reading, fresh

    def _read(self) -> Union[Claim, str]:
        """Reads the file: its Claim, or the reason it holds none."""
        try:
            with open(self._path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return _MISSING
        except OSError as e:
            return f"unreadable: {e.strerror or e}"
        try:
            return parse(data)
        except ValueError as e:
            return str(e)
