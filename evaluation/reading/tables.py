"""The CSV reader: comma-separated text, bounded in size and rows before it is parsed.

(ISIC's predictions file is the exception that proves the rule: its reader must refuse exactly
what the reference scorer's pandas reader refuses, so it has its own tokenizer in
evaluation/challenges/isic/predictions.py, fed by `read_text` here.)
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from evaluation.reading.files import MEGABYTE, Origin, shown_path
from evaluation.reading.values import shown

ROW_BYTES = 1024  # bytes allowed per expected row when a caller bounds a file by its row count
BASE_BYTES = MEGABYTE  # ...plus this much (headers, comments, long ids)


def bytes_for_rows(rows: int) -> int:
    """A size bound for a CSV of about `rows` rows: generous, but never gigabytes."""
    return BASE_BYTES + ROW_BYTES * rows


def read_text(origin: Origin, path: Path, what: str, max_bytes: int) -> str:
    """A UTF-8 text file (a byte-order mark dropped), refused unread when over `max_bytes`."""
    data = origin.read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        origin.fail(f"{what}: {shown_path(Path(path).name)} is not UTF-8 text (byte {error.start + 1} cannot be "
                    f"decoded); save it as UTF-8.")


@dataclass(frozen=True)
class Row:
    line: int  # 1-based line of the file where the row starts
    cells: list[str]  # stripped of surrounding spaces


def read_csv_rows(origin: Origin, path: Path, what: str, max_bytes: int, max_rows: int | None = None) -> list[Row]:
    """The non-blank rows of a comma-separated file (RFC 4180 quoting, CRLF or LF), each with
    its line number; more than `max_rows` rows is refused before the rest is parsed."""
    name = shown_path(Path(path).name)
    text = read_text(origin, path, what, max_bytes)
    if max_rows is not None and text.count("\n") > 2 * max_rows + 1000:
        origin.fail(f"{what}: {name} has {text.count(chr(10))} lines; at most {max_rows} rows are expected.")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    try:
        for cells in reader:
            if any(cell.strip() for cell in cells):
                rows.append(Row(reader.line_num, [cell.strip() for cell in cells]))
                if max_rows is not None and len(rows) > max_rows:
                    origin.fail(f"{what}: {name} has more than {max_rows} rows.")
    except csv.Error as error:
        origin.fail(f"{what}: {name} is not a readable CSV file (line {reader.line_num}: {error}).")
    return rows


def read_csv_records(origin: Origin, path: Path, what: str, columns: tuple[str, ...], max_bytes: int,
                     max_rows: int | None = None) -> list[tuple[int, dict[str, str]]]:
    """(line, {column: value}) of a CSV whose header holds `columns` (more are allowed, each
    named once); every row must have as many values as the header."""
    name = shown_path(Path(path).name)
    rows = read_csv_rows(origin, path, what, max_bytes, None if max_rows is None else max_rows + 1)
    if not rows:
        origin.fail(f"{what}: {name} is empty; expected a header with the columns {', '.join(columns)}.")
    header = rows[0].cells
    missing = [c for c in columns if c not in header]
    if missing:
        found = ", ".join(shown(c) for c in header[:10])
        hint = ""
        if len(header) == 1 and any(sep in header[0] for sep in (";", "\t")):
            hint = " It looks separated by semicolons or tabs; separate values with commas."
        origin.fail(f"{what}: {name} has no column {', '.join(map(repr, missing))} (columns found: {found}); "
                    f"expected the columns {', '.join(columns)}.{hint}")
    if len(set(header)) != len(header):
        origin.fail(f"{what}: {name} repeats a column name in its header.")
    records = []
    for row in rows[1:]:
        if len(row.cells) != len(header):
            origin.fail(f"{what}: row {row.line} of {name} has {len(row.cells)} values for {len(header)} columns.")
        records.append((row.line, dict(zip(header, row.cells, strict=True))))
    return records
