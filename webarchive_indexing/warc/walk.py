"""Read WARC/ARC records together with the byte range each one occupies.

An index entry points at the compressed bytes of one record (``offset``,
``length``), so the reader must know where every gzip member starts and ends.
warcio's ``ArchiveIterator`` knows that too, but it pushes every payload byte
through Python; here the members are inflated with ISA-L, from large blocks of
the file, and only the header blocks are looked at, so the record semantics
(header parsing, the HTTP/no-HTTP decision, ARC headers) are exactly those of
warcio and therefore of pywb:

* the members of a gzipped file are walked by ``members.GzipMembers`` (or its
  compiled twin); a ``.warc.zst``'s records, each one or more zstd frames, by
  ``zstdwarc.ZstdFrames``, which reads like it;
* the common records of a compressed WARC, whose header blocks are plain (ASCII, no
  continuation lines), are read without warcio (``headers``): a header's value is
  found as warcio's parser finds it, when asked for, and records the caller skips
  (requests, metadata) are judged by three headers only;
* any other record goes through warcio's own record loader (``loader``,
  imported then);
* uncompressed files are read in large blocks, each record with warcio's loader, as
  warcio's ``ArchiveIterator`` reads them (``plain``);
* a WACZ's ``archive/`` entries are walked each as the file it holds (``wacz``), their
  records at their offsets in the WACZ.

Bad input is reported (``RecordError``, ``ArchiveError``: the file, the offset, what is
wrong) and the walk goes on where it can: in a gzipped file at the next gzip member (after
a bad record, the next member; after a corrupt or truncated member or other data where
one should start, the next place where a member starts and inflates); in a .warc.zst
likewise at the next record's frames; in an uncompressed file at the next line after the
bad record's start that starts a record. A damaged record is never indexed, even where
warcio reads it (e.g. one cut short by the end of the file).

    with open("example.warc.gz", "rb") as fh:
        for item in iter_records(fh, "example.warc.gz", wants_payload):
            ...
"""
from .members import CompiledMembers, GzipMembers, describe_walker
from .headers import hash_rest, lite_record
from .magic import compression
from .loader import Loader
from .base import ArchiveError, Record, RecordError, RecordProblem, Skipped

__all__ = ["ArchiveError", "Record", "RecordError", "Skipped", "iter_records"]


def _iter_members(members, path, wants_payload, skip, unit, skip_methods, cdxj=()):
    """The records of a file of ``unit``s (gzip members, or a .warc.zst's records' frames)
    that ``members`` walks; after a problem, the walk goes on at the next one that reads.
    ``cdxj``: ``skim``'s last argument, for the compiled walker only."""
    loader = Loader()
    try:
        while True:
            try:
                skipped, problems, offset, values = members.skim(*skip, *cdxj)
                if skipped:
                    yield Skipped(skipped)
                for problem in problems:
                    if type(problem) is ArchiveError:  # the last: its member cannot be read on
                        raise problem
                    yield problem
                if offset is None:
                    return
                if skip_methods and values is not None and values[0] == "request":
                    passed = _skip_request(members, values, skip_methods)
                    if passed is not None:
                        yield Skipped(1, request=True) if passed is True else passed
                        continue
                item = _member_record(members, offset, values, wants_payload, loader)
                if item is not None:
                    yield item
            except ArchiveError as exc:
                resumed = members.recover()
                if resumed is None:
                    raise
                yield RecordError(path, exc.offset, f"{exc.reason}; reading goes on at the next "
                                                    f"{unit}, at offset {resumed}")
    finally:
        loader.close()


def _skip_request(members, values, methods):
    """Pass over the request record ``skim`` stopped at if its HTTP method is one of
    ``methods``, reading no more than its request line: True, or the ``RecordError`` of a
    record that does not end where its Content-Length says; None (nothing consumed) for
    any other request."""
    length = values[2]
    if not length or not length.isdigit() or len(length) > 17:
        return None
    block = members.peek_headers()
    method = members.peek_headers(len(block)).split(b" ", 1)[0]
    if method.decode("latin-1") not in methods:
        return None
    members.skip(len(block))
    return members.finish(int(length)) or True


def _member_record(members, offset, values, wants_payload, loader):
    """The record of the member ``skim`` stopped at (with the values it read, if any): a
    ``Record``, a ``RecordError``, or None for a member that holds no record."""
    block = members.peek_headers()
    record = None
    if values is not None:
        record = lite_record(members, block)
    elif not block.strip():
        head, size = members.drain()
        if size <= len(head) and not head.strip():
            # an empty member (some writers end files with one), or one of blank lines only
            # (a record's trailing newlines, compressed apart), holds no record
            return None
        return RecordError(members.path, offset, "not a WARC or ARC record: blank lines where "
                                                 "the record's header should start")
    if record is None:
        try:
            record = loader.parse(members)
        except EOFError:
            # no HTTP headers where the record says there are: skipped, as warcio does
            members.drain()
            return None
        except RecordProblem as exc:
            members.drain()
            return RecordError(members.path, offset, exc.reason)
    payload_sha1 = hash_rest(record.raw_stream) if wants_payload(record) else None
    if record.length is None:
        # no Content-Length: the record is the rest of its member, as warcio reads it
        members.drain()
    else:
        problem = members.finish(record.raw_stream.limit)
        if problem is not None:
            return problem
    return Record(record, offset, members.end - offset, payload_sha1, loader.notes())


def iter_records(fh, path, wants_payload=lambda record: False, skip=((), ()),
                 zstd_dictionary=None, skip_methods=(), zstd_verify=False, cdxj=None):
    """Yield a ``Record`` per record (``RecordError`` for a record that can be skipped).

    ``wants_payload(record)`` decides whether the sha1 of the rest of the record
    (the payload, after any HTTP headers) is computed. ``skip``, (WARC-Types,
    Content-Types), names WARC records the caller ignores: those of a gzipped or
    zstd file may be passed over unparsed, and counted in a ``Skipped`` instead.
    ``zstd_dictionary`` (a file) decompresses a .warc.zst without a dictionary frame.
    ``zstd_verify``: each frame of a .warc.zst decompressed whole and checked; else the part
    of a record's frame after its first block that the caller leaves unread (a payload not
    hashed) is passed over undecompressed (``zstdwarc.ZstdFrames``).
    ``skip_methods``: HTTP methods (``"GET"``) whose request records (when requests are not
    in ``skip``) are passed over in the same way, each a ``Skipped`` of its own (``request``).
    ``cdxj``: (``urlkey.url_key``, ``urlkey.origin_key``, ``headers.hash_next``, the
    ``"filename": ...`` of a line, a list): where the compiled walker reads a gzipped file
    or a .warc.zst, it makes the whole CDXJ line of a common record (pywb's fields, ``skip``
    being the indexer's), appends it to the list and counts it in a ``Skipped`` instead of
    yielding it (``_members.c``, ``make_line``, ``zstd_skim``); elsewhere it does nothing.
    Raises ``ArchiveError`` when the file cannot be read further.
    """
    head = fh.peek(4)[:4] if hasattr(fh, "peek") else b""
    if not head:
        head = fh.read(4)
        fh.seek(0)
    if not head:
        raise ArchiveError(path, 0, "empty file (0 bytes)")
    kind = compression(head)
    if kind == "gz":
        if CompiledMembers is not None:
            members = CompiledMembers(fh, path, ArchiveError, RecordError)
            return _iter_members(members, path, wants_payload, skip, "gzip member",
                                 skip_methods, (cdxj,) if cdxj else ())
        return _iter_members(GzipMembers(fh, path), path, wants_payload, skip, "gzip member",
                             skip_methods)
    if kind == "zst":
        from .zstdwarc import ZstdFrames
        return _iter_members(ZstdFrames(fh, path, zstd_dictionary, verify=zstd_verify), path,
                             wants_payload, skip, "record's zstd frame", skip_methods,
                             (cdxj,) if cdxj else ())
    if kind == "zip":
        return _iter_wacz(fh, path, wants_payload, skip, skip_methods)
    from .plain import iter_plain  # (its patterns cost start-up time)
    return iter_plain(fh, path, wants_payload)


def _iter_wacz(fh, path, wants_payload, skip, skip_methods):
    """The records of the WARC/ARC entries of a WACZ, one entry after the other, each an
    ``wacz.EntryRecord``; a problem that ends an entry's walk goes on at the next entry."""
    from . import wacz
    fh = wacz.seekable(fh, path)
    entries, problems = wacz.archive_entries(fh, path)
    yield from problems
    for entry in entries:
        with wacz.open_entry(fh, entry) as window:
            try:
                for item in iter_records(window, path, wants_payload, skip,
                                         skip_methods=skip_methods):
                    yield wacz.in_wacz(item, path, entry)
            except ArchiveError as exc:
                yield wacz.in_wacz(exc, path, entry)
