"""The metrics files' formats (``rlsuite.loop.loggers``): ``metrics.jsonl`` lines as strict JSON
(a value that is not a finite number as ``null``) and read back (``read_metrics``),
``metrics.csv`` text with its columns in order of first appearance (such a value as an empty
cell), and, for a resume, the rows and lines of each file split into those kept and the stale.
``loggers`` re-exports ``JSONL``, ``CSV`` and ``read_metrics``.
"""

import csv
import io
import json
import math
import pathlib

JSONL, CSV = "metrics.jsonl", "metrics.csv"
_RESERVED = ("env_steps", "seed")


def read_metrics(out_dir) -> list[dict]:
    """The rows of ``out_dir/metrics.jsonl`` in the order they were written. A last line without
    its newline that does not parse (a write cut short by a kill) is left out; any other line
    that does not parse is an error. ``null`` values are read as NaN."""
    path = pathlib.Path(out_dir) / JSONL
    text = path.read_text()
    lines = text.splitlines()
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines) and not text.endswith("\n"):
                break
            raise ValueError(f"{path} line {number} is not a JSON object: {line[:80]!r}") from e
        # One NaN object (as json's own `NaN`), so that rows read twice compare equal.
        rows.append({k: math.nan if v is None else v for k, v in row.items()})
    return rows


def _json_line(row: dict) -> str:
    """A row as strict JSON: a value that is not a finite number becomes ``null``."""
    row = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}
    return json.dumps(row, allow_nan=False) + "\n"


def _nonempty(path: pathlib.Path) -> bool:
    return path.exists() and path.stat().st_size > 0


def _last_header(path: pathlib.Path) -> str:
    """The last header line of a CSV file (one starts every block appended to a stale file)."""
    header = ""
    with open(path, newline="") as f:
        for line in f:
            if line.startswith(_RESERVED[0] + ","):
                header = line
    return header


def _csv_text(fields: list[str], rows: list[dict], header: bool = True) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, restval="", lineterminator="\n")
    if header:
        writer.writeheader()
    writer.writerows({k: _csv_cell(v) for k, v in row.items()} for row in rows)
    return buffer.getvalue()


def _csv_cell(value):
    """An empty cell for a value that is not a finite number (``null`` in the JSONL)."""
    return "" if isinstance(value, float) and not math.isfinite(value) else value


def _fields_of(rows: list[dict]) -> list[str]:
    fields = list(_RESERVED)
    for row in rows:
        fields.extend(k for k in row if k not in fields)
    return fields


def _split_jsonl(path: pathlib.Path, step: int) -> tuple[list[dict], list[str]]:
    """(kept rows, stale lines) of a metrics.jsonl for a resume at ``step``."""
    kept_rows, stale = [], []
    for line in path.read_text().splitlines(keepends=True) if path.exists() else []:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            keep = line.endswith("\n") and int(row["env_steps"]) <= step
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            keep = False
        if keep:
            kept_rows.append(row)
        else:
            stale.append(line if line.endswith("\n") else line + "\n")
    return kept_rows, stale


def _env_steps(line: str) -> int:
    """``env_steps`` of a JSONL line, or -1 for a line that is cut short or not a row."""
    try:
        return int(json.loads(line)["env_steps"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        return -1


def _stale_csv_lines(path: pathlib.Path, step: int) -> tuple[str, list[str]]:
    """(header line, stale data lines) of a metrics.csv for a resume at ``step``."""
    if not _nonempty(path):
        return "", []
    lines = path.read_text().splitlines(keepends=True)
    header, stale = lines[0], []
    names = next(csv.reader([header]))
    column = names.index("env_steps") if "env_steps" in names else None
    for line in lines[1:]:
        fields = next(csv.reader([line]), [])
        try:
            keep = len(fields) == len(names) and line.endswith("\n") and int(fields[column]) <= step
        except (TypeError, ValueError):
            keep = False
        if not keep and line.strip():
            stale.append(line if line.endswith("\n") else line + "\n")
    return header if header.endswith("\n") else header + "\n", stale
