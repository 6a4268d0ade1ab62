"""JMeter results (`jmeter -n -t PLAN -l RESULTS.jtl`), CSV with its header line or
XML: one sample per request. The label is the request type; `timeStamp` (ms since the
epoch) the start, `elapsed` (ms) the response time; a sample with success=false is
not `ok` (its response code says which status: see `client.failure`). Sub-samples of
an XML sample (embedded resources) are part of their parent and not imported."""

from __future__ import annotations

import csv
from pathlib import Path
from xml.parsers import expat

import pandas as pd

from ...errors import InputError
from ..folder import Trace
from .client import failure, from_records
from .timeline import MAX_COUNT, check_span

# JMeter's CSV header names and the XML attributes that hold the same field.
FIELDS = {"timeStamp": "ts", "elapsed": "t", "label": "lb", "responseCode": "rc", "responseMessage": "rm", "success": "s", "bytes": "by"}
REQUIRED = ("timeStamp", "elapsed", "label", "success")


def read(path: str | Path, window: float = 0.1, warmup: float = 0.0) -> Trace:
    path = Path(path)
    try:
        head = path.read_bytes()[:200].lstrip()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    rows = _xml_rows(path) if head.startswith(b"<") else _csv_rows(path)
    records = [_record(path, line, row) for line, row in rows]
    if not records:
        raise InputError(f"{path}: no samples in the file")
    r = pd.DataFrame(records)
    check_span(path, window, r.start, r.start + r.response_time, r.line)
    return from_records(r, "jmeter", path, window, warmup)


def _csv_rows(path: Path) -> list[tuple[int, dict]]:
    with path.open(newline="", encoding="utf-8", errors="strict") as f:
        try:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            lacking = [c for c in REQUIRED if c not in header]
            if lacking:
                raise InputError(
                    f"{path} line 1: no {', '.join(lacking)} column(s) in the header; write the results as CSV with field names "
                    "(jmeter -Jjmeter.save.saveservice.print_field_names=true, the default since JMeter 2.13 in newer releases) or as XML"
                )
            rows = []
            for row in reader:
                if None in row or any(v is None for v in row.values()):
                    raise InputError(f"{path} line {reader.line_num}: {len(header)} fields expected (as in the header), got another number")
                rows.append((reader.line_num, {FIELDS[k]: v for k, v in row.items() if k in FIELDS}))
            return rows
        except UnicodeDecodeError as e:
            raise InputError(f"{path}: not a text (UTF-8) file: byte {e.start} cannot be decoded") from None
        except csv.Error as e:
            raise InputError(f"{path} line {reader.line_num}: {e}") from None


def _xml_rows(path: Path) -> list[tuple[int, dict]]:
    """The top-level samples of <testResults>, with the line each starts on."""
    rows: list[tuple[int, dict]] = []
    depth = 0
    parser = expat.ParserCreate()

    def start(name: str, attrs: dict) -> None:
        nonlocal depth
        depth += 1
        if depth == 2:
            rows.append((parser.CurrentLineNumber, attrs))

    def end(name: str) -> None:
        nonlocal depth
        depth -= 1

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        with path.open("rb") as f:
            parser.ParseFile(f)
    except expat.ExpatError as e:
        raise InputError(f"{path} line {e.lineno}: not well-formed XML ({expat.ErrorString(e.code)})") from None
    return rows


def _record(path: Path, line: int, row: dict) -> dict:
    def number(key: str, name: str, top: float = float("inf")) -> float:
        try:
            value = float(row[key])
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{path} line {line}: {name} = {row.get(key)!r}; it must be a number (JMeter writes milliseconds)") from None
        if not 0 <= value < top:
            raise InputError(
                f"{path} line {line}: {name} = {row[key]!r}; it must be a finite number, not negative" + (f", below {top:.3g}" if top < float("inf") else "")
            )
        return value

    start, elapsed = number("ts", "timeStamp"), number("t", "elapsed")
    if "lb" not in row:
        raise InputError(f"{path} line {line}: the sample has no label")
    ok = str(row.get("s", "")).strip().lower()
    if ok not in ("true", "false"):
        raise InputError(f"{path} line {line}: success = {row.get('s')!r}; it must be true or false")
    status, kind = ("ok", None) if ok == "true" else failure(str(row.get("rc", "")), str(row.get("rm", "")))
    size = number("by", "bytes", MAX_COUNT) if row.get("by") not in (None, "") else 0
    return {"start": start / 1000, "response_time": elapsed / 1000, "type": row["lb"], "status": status, "failure": kind, "bytes": int(size), "line": line}
