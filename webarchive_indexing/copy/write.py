"""The work of one copy task: the records of one planned chunk, fetched and written into
a new WARC file, then its index::

    OUT/extract-00000.warc.gz        warcinfo (source, selection), then the members as they
                                     were, byte for byte (records of .warc.zst and .warc
                                     sources compressed into members of their own)
    OUT/extract-00000.failures.json  records that could not be copied, with reasons
    OUT/extract-00000.cdxj           its index (records at their new offsets), as pywb's
                                     cdx-indexer writes it; published last

or, as the plan says (``--output-format zst``), ``OUT/extract-00000.warc.zst``: the same
records, a zstd frame each, after a dictionary frame that embeds the dictionary of the
file, trained on its records (or given); its index points at the records' frames.

An output is complete when its ``.cdxj`` exists and it has no ``.failures.json``;
``run_chunk`` skips complete outputs and redoes the others whole. Nothing here names a
file after a process or a time: a task's outputs are named after its chunk, so a retried
or rerun task replaces exactly what an earlier attempt wrote.
"""
import collections
import contextlib
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from warcio.warcwriter import WARCWriter

from ..cdx import indexer, cdxline
from .. import options, storage
from ..options import DEFAULT_DICT_SIZE, DEFAULT_RETRIES, DEFAULT_THREADS
from ..util.wire import Wire, option_field
from .fetch import Failed, again, fetch_record, source_path
from .plan import GZ_OUTPUT, plan_of, plan_path
from ..warc.raw import open_records, record_starts, record_writer
from ..warc.zstdwarc import SAMPLES_PER_DICT_BYTE, load_dictionary, sized_dictionary

SOFTWARE = "webarchive-indexing (webarchive-index copy)"
# Inputs listed in a warcinfo record (plan.json has them all).
WARCINFO_INPUTS_MAX = 50


def _warcinfo(writer, filename, info):
    fields = {"software": SOFTWARE, "format": "WARC File Format 1.0"}
    fields.update(info or {})
    writer.write_record(writer.create_warcinfo_record(filename, fields))


def output_paths(output, name, fmt="gz"):
    """The files of the output ``name``: its WARC file (.warc.gz, or .warc.zst for ``fmt``
    "zst"), its index, its failures."""
    base = storage.resolve(output, name)
    return {"warc": f"{base}.warc.{fmt}", "cdxj": base + ".cdxj",
            "failures": base + ".failures.json"}


def is_complete(output, name):
    """Whether the output ``name`` is there whole: its index, and no failures."""
    paths = output_paths(output, name)
    return again(lambda: storage.exists(paths["cdxj"]) and not storage.exists(paths["failures"]),
                  output)


@dataclass
class ChunkStatus(Wire):
    """What copying one chunk did (``copy_chunk``, ``run_chunk``)."""
    name: str
    records: int = 0        # done: copied or failed
    copied: int = 0
    failed: int = 0
    bytes: int = 0          # of the records copied
    index_lines: int = 0    # in its .cdxj (None: skipped, complete already)
    skipped: bool = False
    failures: str = None    # its .failures.json, if any record failed
    dictionary_id: int = None  # of a .warc.zst's dictionary


def copy_chunk(lines, warc_prefix, output, name, threads=DEFAULT_THREADS, warcinfo=None,
               retries=DEFAULT_RETRIES, progress=None, zstd_dictionary=None, warc=GZ_OUTPUT):
    """Copy the records of ``lines`` (index lines) into ``output/name.warc.gz`` (or
    ``.warc.zst``, as ``warc``, a plan's ``warc`` settings, say); write its
    ``.failures.json`` (if any record could not be copied) and then its ``.cdxj``.

    ``threads`` reads are in flight at once; records are written in the order of
    ``lines``. ``warcinfo``: more fields for the warcinfo record. ``progress(records,
    bytes)`` is called as records are done (copied or failed). ``zstd_dictionary``: the
    dictionary file of .warc.zst sources without their own. Returns a ``ChunkStatus``.
    """
    output = storage.abspath(output)
    fmt = warc["format"]
    paths = output_paths(output, name, fmt)
    filename = storage.basename(paths["warc"])
    if storage.is_local(warc_prefix):
        warc_prefix = storage.abspath(warc_prefix)  # tasks may run in another directory
        retries = 0  # a local file reads the same the next time
    # what an earlier attempt at this output left when it was killed
    storage.remove_leftovers(paths.values())
    staged = storage.staging_path(paths["warc"])
    # a .warc.zst is written from the records as they are, once they are all there
    staged_records = storage.staging_path(paths["warc"]) if fmt == "zst" else None
    status = ChunkStatus(name)
    failures = []
    done = [0, 0]

    def fetch(record):
        if record is None:
            return None
        try:
            return fetch_record(source_path(warc_prefix, record.filename), record.offset,
                                record.length, retries, zstd_dictionary, member=fmt == "gz",
                                level=warc["level"])
        except Failed as exc:
            return exc

    def records():
        for line in lines:
            if isinstance(line, str):
                line = line.encode("utf-8")
            if not line.strip():
                continue
            try:
                yield line, cdxline.location(line)
            except ValueError as exc:
                yield line, exc

    try:
        with open(staged_records or staged, "wb") as tmp:
            writer = WARCWriter(tmp, gzip=staged_records is None)
            _warcinfo(writer, filename, warcinfo)
            with ThreadPoolExecutor(max(1, threads)) as pool:
                pending = collections.deque()

                def finish():
                    (line, record), future = pending.popleft()
                    result = future.result()
                    status.records += 1
                    if isinstance(record, Exception) or isinstance(result, Exception):
                        failure = record if isinstance(record, Exception) else result
                        failures.append(_failure(line, record, warc_prefix, failure))
                    else:
                        tmp.write(result)
                        status.copied += 1
                        status.bytes += record.length
                    done[0] += 1
                    done[1] += record.length if isinstance(record, cdxline.Location) else 0
                    if progress:
                        progress(done[0], done[1])

                for item in records():
                    record = item[1] if isinstance(item[1], cdxline.Location) else None
                    pending.append((item, pool.submit(fetch, record)))
                    if len(pending) >= 2 * threads:
                        finish()
                while pending:
                    finish()
        if staged_records:
            status.dictionary_id = write_zst(staged_records, staged, warc)
        index = indexer.index_file(staged, filename, "cdxj", opener=lambda p: open(p, "rb"))
        if index.errors:
            raise RuntimeError(f"{staged} (to become {paths['warc']}) does not read back: "
                               f"{index.errors[0]}")
        status.index_lines = len(index.lines)
        again(lambda: storage.publish(staged, paths["warc"]), output)
        if failures:
            status.failed = len(failures)
            status.failures = paths["failures"]
            report = {"output": paths["warc"], "failed": len(failures), "records": failures}
            data = json.dumps(report, indent=1).encode("utf-8")
            again(lambda: storage.write_atomic(paths["failures"], data), output)
        # the index last: it marks the output complete (with no failures file)
        data = "".join(index.lines).encode("utf-8")
        again(lambda: storage.write_atomic(paths["cdxj"], data), output)
        if not failures:
            again(lambda: storage.remove(paths["failures"]), output)
    finally:
        for path in (staged, staged_records):
            with contextlib.suppress(FileNotFoundError, TypeError):
                os.unlink(path)
    return status


def write_zst(source, target, warc):
    """Write the records of the uncompressed WARC file ``source`` into the .warc.zst
    ``target``, a zstd frame each (at ``warc["level"]``), with the dictionary
    ``warc["dictionary"]``, else one trained on the records (none if they are too few to
    train one); the id of the dictionary (0 for none)."""
    if warc["dictionary"]:
        zdict = load_dictionary(warc["dictionary"])
    else:
        with open_records(source) as records:
            zdict = sized_dictionary(list(record_starts(
                records, DEFAULT_DICT_SIZE * SAMPLES_PER_DICT_BYTE)), DEFAULT_DICT_SIZE)
    with open(target, "wb") as fh, open_records(source) as records:
        write = record_writer(fh, "zst", warc["level"], zdict)
        for record in records:
            write(record.pieces)
    return zdict.dict_id() if zdict is not None else 0


def _failure(line, record, warc_prefix, failure):
    """The report of a record not copied. ``permanent``: another attempt fails the same
    way (a line that is no CDX line, an ARC record, a name outside the prefix, a missing
    or unreadable archive)."""
    entry = {"line": line.decode("utf-8", "replace").rstrip("\r\n"), "reason": str(failure),
             "permanent": getattr(failure, "permanent", True)}
    if isinstance(record, cdxline.Location):
        try:
            entry["source"] = source_path(warc_prefix, record.filename)
        except Failed:
            entry["source"] = None  # a name that leads elsewhere: the reason says so
        entry.update(offset=record.offset, length=record.length)
    return entry


def warcinfo_fields(plan, warc_prefix, chunk_path):
    if plan.records_csv:
        return {"description": "records copied, as they were, from a web archive collection "
                               "as a CSV file names them",
                "source-records": plan.records_csv, "warc-prefix": warc_prefix,
                "plan": chunk_path}
    inputs = plan.inputs
    shown = ", ".join(inputs[:WARCINFO_INPUTS_MAX])
    if len(inputs) > WARCINFO_INPUTS_MAX:
        shown += f", ... ({len(inputs) - WARCINFO_INPUTS_MAX} more, see {plan_path(plan.output)})"
    return {"description": "records copied, as they were, from a web archive collection "
                           "through its ZipNum index",
            "source-cluster": plan.cluster, "selection": shown, "warc-prefix": warc_prefix,
            "plan": chunk_path}


class _ProgressFile:
    """``progress(records, bytes)`` for ``copy_chunk`` that keeps ``directory/name``
    up to date (twice a second at most) for a driver on the same machine to add up."""

    def __init__(self, directory, name):
        self.path = os.path.join(directory, name)
        self.last = 0.0

    def __call__(self, records, size, force=False):
        now = time.monotonic()
        if not force and now - self.last < 0.5:
            return
        self.last = now
        with contextlib.suppress(OSError):  # progress is a nicety, never a reason to fail
            tmp = f"{self.path}.tmp-{os.getpid()}-{threading.get_ident()}"
            with open(tmp, "w") as fh:
                fh.write(f"{records} {size}\n")
            os.replace(tmp, self.path)


def read_progress(directory):
    """(records, bytes) done, added up over the progress files in ``directory``."""
    records = size = 0
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if ".tmp-" in name:
                continue
            with contextlib.suppress(OSError, ValueError):
                with open(os.path.join(directory, name)) as fh:
                    r, s = fh.read().split()
                records, size = records + int(r), size + int(s)
    return records, size


@dataclass(frozen=True)
class ChunkSettings(Wire):
    """How each planned chunk is copied (``run_chunk``): what the copy makes from its
    options, every engine hands its copy tasks as it is, and the copy job takes as its
    options (``command_line``, ``parsed``). ``progress_dir``: a local directory where
    progress is reported (see ``read_progress``); ``zstd_dictionary``: the dictionary file
    of .warc.zst sources without their own."""
    output: str = option_field(options.COPY_DIR)
    warc_prefix: str = option_field(options.WARC_PREFIX)
    threads: int = option_field(options.THREADS)
    retries: int = option_field(options.RETRIES)
    progress_dir: str = option_field(options.PROGRESS_DIR)
    zstd_dictionary: str = option_field(options.ZSTD_DICTIONARY)


def run_chunk(chunk_path, settings, on_progress=None):
    """The work of one task: copy the planned chunk ``chunk_path`` (``OUT/plan/NAME.cdx``)
    into ``settings.output`` (in the format its plan says) as ``settings`` (a
    ``ChunkSettings``) say, unless its output is complete already; a ``ChunkStatus``.
    ``on_progress(records, bytes)``: called as records are done.
    """
    output, progress_dir = settings.output, settings.progress_dir
    output = storage.abspath(output)
    name = storage.basename(chunk_path).removesuffix(".cdx")
    plan = plan_of(output)
    planned = next((c for c in plan.chunks if c["name"] == name), None)
    if planned is None:
        raise ValueError(f"{chunk_path} is not a chunk of the plan in {plan_path(output)}")
    reporters = [on_progress] if on_progress else []
    if progress_dir:
        reporters.append(_ProgressFile(progress_dir, name))

    def progress(records, size, force=False):
        for report in reporters:
            if isinstance(report, _ProgressFile):
                report(records, size, force)
            else:
                report(records, size)

    if is_complete(output, name):
        progress(planned["records"], planned["bytes"], True)
        return ChunkStatus(name, planned["records"], planned["records"], 0, planned["bytes"],
                           None, True)
    lines = again(lambda: storage.read_bytes(chunk_path), chunk_path).splitlines(True)
    warc_prefix = settings.warc_prefix
    status = copy_chunk(lines, warc_prefix, output, name, settings.threads,
                        warcinfo_fields(plan, warc_prefix, chunk_path), settings.retries,
                        progress, settings.zstd_dictionary, plan.warc)
    progress(status.records, planned["bytes"], True)
    return status
