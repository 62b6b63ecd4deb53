"""Records named by a CSV file, as Common Crawl's WARC export takes them from a SQL result
(``CCIndexWarcExport --csv``; an Athena, DuckDB or Spark SQL query over a columnar
index): the columns ``url``, ``warc_filename``, ``warc_record_offset`` and
``warc_record_length``.

    for line, record in chunk_lines("records.csv"):   # record: a cdxline.Location
        ...

A header row names the columns (in any order, among others, as a query selects them);
without one, the first four columns are taken in that order. Each record is taken once
(a query that joins may list one twice), in the order of the file. A record's line in a
plan's chunk is shaped as a CDXJ line, with ``-`` for the SURT key and the timestamp,
which a CSV does not give: ``- - {"url": ..., "filename": ..., "offset": ..., "length": ...}``.
"""
import csv
import hashlib
import io
import json

from .. import storage
from ..cdx.cdxline import Location
from .selection import SelectionError, Tally

COLUMNS = ("url", "warc_filename", "warc_record_offset", "warc_record_length")
# Without these a row names no record (``url`` is optional: it only labels the record)
REQUIRED = COLUMNS[1:]


def _columns(first, path):
    """(where each of ``COLUMNS`` is (None: not there), whether ``first`` is a header)."""
    names = [cell.strip().lower() for cell in first]
    if any(name in COLUMNS for name in names):
        missing = [name for name in REQUIRED if name not in names]
        if missing:
            raise SelectionError(f"{path}: the header names no {', '.join(missing)} column: a "
                                 f"records CSV has the columns {', '.join(COLUMNS)}")
        return [names.index(name) if name in names else None for name in COLUMNS], True
    if len(first) >= len(COLUMNS) and first[2].strip().isdigit() and first[3].strip().isdigit():
        return list(range(len(COLUMNS))), False
    raise SelectionError(f"{path} line 1: neither a header naming the columns "
                         f"{', '.join(COLUMNS)} nor a row of these four columns in this order")


def read_records(path):
    """``(url, Location)`` of each distinct record of the CSV at ``path`` (local or remote),
    in order; ``SelectionError`` naming the line of a row that names no record."""
    try:
        raw = storage.open_read(path)
    except FileNotFoundError:
        raise SelectionError(f"no such records CSV: {path}") from None
    seen = set()
    with raw, io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as text:
        rows = csv.reader(text)
        where = header = None
        try:
            for number, row in enumerate(rows, 1):
                if not any(cell.strip() for cell in row):
                    continue
                if where is None:
                    where, header = _columns(row, path)
                    if header:
                        continue
                record = _record(row, where, path, number)
                if (record[1].filename, record[1].offset) not in seen:
                    seen.add((record[1].filename, record[1].offset))
                    yield record
        except (csv.Error, UnicodeDecodeError) as exc:
            raise SelectionError(f"{path} line {rows.line_num}: not a CSV file of UTF-8 "
                                 f"text: {exc}") from None


def _record(row, where, path, number):
    try:
        url, filename, offset, length = (row[i].strip() if i is not None else ""
                                         for i in where)
    except IndexError:
        raise SelectionError(f"{path} line {number}: {len(row)} columns, fewer than the "
                             "header's") from None
    if not filename:
        raise SelectionError(f"{path} line {number}: no warc_filename")
    if not offset.isdigit() or not length.isdigit() or int(length) == 0:
        raise SelectionError(f"{path} line {number}: warc_record_offset {offset!r} and "
                             f"warc_record_length {length!r}: expected whole numbers, the "
                             "length at least 1")
    return url, Location(filename, int(offset), int(length))


def chunk_lines(path):
    """``(line, Location)`` of each record of the CSV at ``path``: the line (bytes) a
    plan's chunk holds for it."""
    for url, record in read_records(path):
        fields = {"url": url, "filename": record.filename, "offset": str(record.offset),
                  "length": str(record.length)}
        yield f"- - {json.dumps(fields)}\n".encode("utf-8"), record


def digest(path):
    """The SHA-1 of the file at ``path`` (hex): what a plan made from it remembers."""
    sha1 = hashlib.sha1()
    try:
        with storage.open_read(path) as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                sha1.update(block)
    except FileNotFoundError:
        raise SelectionError(f"no such records CSV: {path}") from None
    return sha1.hexdigest()


def check(path):
    """A ``selection.Tally`` of the records of the CSV at ``path``: what a copy takes."""
    total = Tally()
    for _, record in read_records(path):
        total.add(record)
    return total
