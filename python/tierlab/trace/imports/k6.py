"""k6 results (`k6 run --out json=RESULTS.json`, gzipped if named `.gz`): one JSON
object per line; every
`http_req_duration` point is one request. Its `value` (ms) is the response time —
sending, waiting and receiving; connecting and time blocked on a free connection are
not part of it — and its `time` is when the request ended (k6 stamps HTTP samples
with the trail's end), so the start is `time − value`. The `name` tag is the request
type (the URL unless the script names it); `status` and `expected_response` say how
it went (status 0: no response, see the `error_code` tag). Other metrics are skipped."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd

from ...errors import InputError
from ..folder import Trace
from .client import failure, from_records
from .timeline import check_span

# k6's error codes for a request without a response (docs: k6 error codes): 1050 is
# its request time-out, 1200–1299 and 1000–1099 are network and DNS failures.
TIMEOUT_CODE = "1050"


def read(path: str | Path, window: float = 0.1, warmup: float = 0.0) -> Trace:
    path = Path(path)
    records = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8") as f:
            for line, text in enumerate(f, 1):
                if text.strip():
                    r = _record(path, line, text)
                    if r is not None:
                        records.append(r)
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a text (UTF-8) file: byte {e.start} cannot be decoded") from None
    except (OSError, EOFError) as e:
        raise InputError(f"cannot read {path}: {e}") from None
    if not records:
        raise InputError(f"{path}: no http_req_duration points; write the results with `k6 run --out json={path.name} SCRIPT`")
    r = pd.DataFrame(records)
    check_span(path, window, r.start, r.start + r.response_time, r.line)
    return from_records(r, "k6", path, window, warmup, {"bytes": "k6 counts data received per iteration, not per request"})


def _record(path: Path, line: int, text: str) -> dict | None:
    try:
        item = json.loads(text)
    except ValueError as e:
        raise InputError(f"{path} line {line}: not a JSON object ({e}); k6 --out json writes one per line") from None
    if not isinstance(item, dict) or "type" not in item:
        raise InputError(f"{path} line {line}: not a k6 output line (no `type`)")
    if item["type"] != "Point" or item.get("metric") != "http_req_duration":
        return None
    data: Any = item.get("data")
    try:
        tags = data.get("tags") or {}
        ms = float(data["value"])
        end = pd.Timestamp(data["time"])
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path} line {line}: an http_req_duration point needs data.time (RFC 3339) and data.value (ms): {e}") from None
    if not isinstance(tags, dict):
        raise InputError(f"{path} line {line}: data.tags is a {type(tags).__name__}; k6 writes a mapping of tag names to values")
    odd = next((k for k in ("name", "status", "expected_response", "error_code") if k in tags and not isinstance(tags[k], str)), None)
    if odd is not None:
        raise InputError(f"{path} line {line}: data.tags.{odd} = {json.dumps(tags[odd])}; k6 writes tag values as texts")
    if not 0 <= ms < float("inf"):
        raise InputError(f"{path} line {line}: data.value = {ms}; a duration is a finite number of milliseconds, not negative")
    if pd.isna(end):
        raise InputError(f"{path} line {line}: data.time = {data['time']!r} is no time (RFC 3339)")
    code = str(tags.get("status", ""))
    good = tags.get("expected_response", "true") == "true" and code != "0"
    if good:
        status, kind = "ok", None
    elif code in ("", "0"):
        timed_out = str(tags.get("error_code", "")) == TIMEOUT_CODE
        status, kind = ("timeout", "timeout") if timed_out else ("error", "connect")
    else:
        status, kind = failure(code)
    return {
        "start": end.timestamp() - ms / 1000,
        "response_time": ms / 1000,
        "type": tags.get("name", "request"),
        "status": status,
        "failure": kind,
        "bytes": 0,
        "line": line,
    }
