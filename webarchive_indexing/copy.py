"""Copy the captures of some domains, hosts or URL prefixes out of a web archive collection,
found through its ZipNum cluster, into new WARC files: ``webarchive-index copy``.

    from webarchive_indexing import copy
    from webarchive_indexing.query import open_cluster

    inputs = copy.parse_selection(["example.com", "http://example.org/blog/*"])
    cluster = open_cluster("s3://bucket/index")
    per_input, total = copy.check(cluster, inputs)          # captures, WARC files, bytes
    plan = copy.ensure_plan(cluster, "s3://bucket/index", inputs, "out", records_per_file=10000)
    for chunk in plan.chunk_paths():                         # one task each (job, Spark, here)
        copy.run_chunk(chunk, "out", "s3://commoncrawl/", threads=16)
    copy.survey("out")                                       # what is complete, what failed

Selection (``parse_input``): a bare name (``example.com``) or ``*.example.com`` is the
domain and every subdomain (``www.example.com``, ``a.b.example.com``; not
``examples.com``); anything with a ``/`` or ending in ``*`` (``example.com/path``,
``http://example.com/a*``, ``www.example.com/*``) is a URL prefix, the ``*`` stripped.
Keys are SURT keys, as in pywb and Common Crawl's index: ``http``/``https``, ``www.``
and default ports make no difference. The key ranges of all inputs are merged
(``merge_ranges``), so a record selected by two inputs is copied once.

The work is split in three, each a plain function used alike by the MRJob job
(``jobs/remote_copy.py``), Spark (``engines``), the command line and the tests:

1. ``check``: per input and in total, the captures, distinct WARC files and bytes to
   copy, from the index alone (one pass over the merged ranges).
2. ``make_plan`` / ``ensure_plan``: one pass over the matching index lines (streamed,
   constant memory) into chunk files of at most ``records_per_file`` lines in index
   order, so chunk numbers, and output names, depend only on the selection::

       OUT/plan/extract-00000.cdx    the index lines of output 0
       OUT/plan/chunks.txt           the chunk files, one URI a line: the job's input
       OUT/plan/plan.json            selection, merged key ranges, cluster, per-chunk
                                     totals; written last (a plan without it is redone)

   A rerun reuses the plan; a different selection (other key ranges, cluster,
   ``records_per_file`` or name prefix) in the same output raises ``PlanMismatch``.
3. ``copy_chunk`` / ``run_chunk``: each record is fetched with one ranged read of
   ``warc_prefix + filename`` (threads, a bounded number in flight, written in index
   order), checked to be one complete gzip member of the CDX length holding a WARC
   record, and retried with backoff when it is not (or the read failed: 503, reset,
   short body); then::

       OUT/extract-00000.warc.gz        warcinfo (source, selection), then the members as
                                        they were, byte for byte
       OUT/extract-00000.failures.json  records that could not be copied, with reasons
       OUT/extract-00000.cdxj           its index (records at their new offsets), as
                                        pywb's cdx-indexer writes it; published last

   An output is complete when its ``.cdxj`` exists and it has no ``.failures.json``;
   ``run_chunk`` skips complete outputs and redoes the others whole.

Nothing here names a file after a process or a time: a task's outputs are named after
its chunk, so a retried or rerun task replaces exactly what an earlier attempt wrote.
"""
import collections
import contextlib
import ipaddress
import json
import os
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from . import cdx, cdxline, retry, storage
from .query import search_range

DEFAULT_THREADS = 16
DEFAULT_RECORDS_PER_FILE = 10000
DEFAULT_NAME_PREFIX = "extract"
# Further reads of a record after the first failed (transient errors only), backing off
# as ``retry.COPY`` says. Each read is itself tried again by ``storage.read_range`` (S3,
# HTTP) on resets and short bodies, and by botocore on 503s until its retry quota (shared
# by a process's threads) runs dry in a long storm of them; these rounds ride out such
# storms, and add what neither can see: a member that does not check out.
DEFAULT_RETRIES = 5
# How much of a record is decompressed and kept to check what it holds.
HEAD_BYTES = 1 << 12
PLAN_VERSION = 1
PLAN_DIR = "plan"
SOFTWARE = "webarchive-indexing (webarchive-index copy)"
# Inputs listed in a warcinfo record (plan.json has them all).
WARCINFO_INPUTS_MAX = 50

__all__ = ["Input", "PlanMismatch", "SelectionError", "check", "copy_chunk", "copy_chunks",
           "ensure_plan", "load_plan", "make_plan", "merge_ranges", "parse_input",
           "parse_selection", "read_selection_file", "run_chunk", "survey"]


def _again(action, where, retries=DEFAULT_RETRIES):
    """``action()`` on the file or directory ``where``; if that is remote, again (``retries``
    more times, as ``retry.COPY`` says) when it fails with anything but a permanent error:
    the small reads and writes of plans, chunks and reports, which S3 may answer with a
    storm of 503s that outlasts botocore's retries."""
    if storage.is_local(where):
        return action()
    return retry.call(action, retry.COPY.with_attempts(retries + 1),
                      lambda exc: not isinstance(exc, retry.PERMANENT))


# Plans read by this process, by output (a task may run several chunks of one plan).
_PLANS = {}
_PLANS_LOCK = threading.Lock()


class SelectionError(ValueError):
    """A selection input that is not a domain, host name or URL prefix."""


class PlanMismatch(ValueError):
    """The output holds the plan of another selection."""


# -- the selection ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Input:
    text: str     # as given
    kind: str     # "domain" or "prefix"
    ranges: tuple  # SURT key ranges (start, end), end exclusive

    def covers(self, line):
        """Whether the index line ``line`` (bytes) is selected by this input."""
        return any(start.encode() <= line < end.encode() for start, end in self.ranges)


def parse_input(text):
    """One selection input -> ``Input``; raises ``SelectionError`` saying what is accepted."""
    text = text.strip()
    hint = ("give a domain (example.com or *.example.com: it and every subdomain) or a URL "
            "prefix (example.com/path, http://example.com/a*)")
    if not text:
        raise SelectionError(f"empty selection input: {hint}")
    if any(c.isspace() for c in text):
        raise SelectionError(f"{text!r} contains white space: {hint}")
    if text.startswith("*."):
        name = text[2:]
        if "/" in name or "*" in name or not name.strip("."):
            raise SelectionError(f"{text!r}: *. takes a host name (*.example.com); {hint}")
        kind, url, match = "domain", name, "domain"
    elif "/" in text or text.endswith("*"):
        url = text.removesuffix("*")
        if "*" in url:
            raise SelectionError(f"{text!r}: a * may only end a URL prefix or start *.domain")
        kind, match = "prefix", "prefix"
    else:
        if "*" in text:
            raise SelectionError(f"{text!r}: a * may only end a URL prefix or start *.domain")
        kind, url, match = "domain", text, "domain"
    if match == "domain" and _is_ip(url):
        match = "host"  # an IP address has no subdomains (and no SURT host commas)
    if "://" not in url:
        url = "http://" + url  # else surt takes 'example.com' in 'example.com:8080' for a scheme
    try:
        start, end = search_range(url, match)
    except ValueError as exc:
        raise SelectionError(f"{text!r}: {exc}") from None
    ranges = [(start, end)]
    if kind == "domain" and ":" not in start.split(")", 1)[0]:
        # the host itself on other ports (com,example:8080)/...: ':' sorts after the '-'
        # that ends the domain's range), which a CDX server's domain query leaves out;
        # subdomains on other ports (com,example,www:8080)/) are in the range already
        host = start.split(")", 1)[0].rstrip(",")
        ranges.append((host + ":", host + ";"))
    return Input(text, kind, tuple(ranges))


def _is_ip(name):
    try:
        ipaddress.ip_address(name.split(":")[0] if name.count(":") == 1 else name.strip("[]"))
    except ValueError:
        return False
    return True


def parse_selection(items):
    """The ``Input`` of each text of ``items``, in order; blanks and duplicates dropped."""
    inputs, seen = [], set()
    for item in items:
        if not item.strip() or item.strip() in seen:
            continue
        seen.add(item.strip())
        inputs.append(parse_input(item))
    return inputs


def split_list(text):
    """The inputs of a ``--domains`` value: comma-separated."""
    return [part.strip() for part in text.split(",") if part.strip()]


def read_selection_file(path):
    """The inputs listed in a file (local or ``s3://``): one a line, ``#`` starts a comment."""
    try:
        data = storage.read_bytes(path)
    except FileNotFoundError:
        raise SelectionError(f"no such selection file: {path}") from None
    items = []
    for line in data.decode("utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            items.append(line)
    return items


@dataclass
class Group:
    """A merged key range and the inputs (their indices) whose ranges it covers."""
    start: str
    end: str
    members: list


def merge_ranges(inputs):
    """The key ranges of ``inputs`` merged into sorted, disjoint ``Group``s: every index
    line falls in at most one, so each record is selected once."""
    ranges = sorted((start, end, i) for i, item in enumerate(inputs) for start, end in item.ranges)
    groups = []
    for start, end, i in ranges:
        if groups and start <= groups[-1].end:
            groups[-1].end = max(groups[-1].end, end)
            if i not in groups[-1].members:
                groups[-1].members.append(i)
        else:
            groups.append(Group(start, end, [i]))
    return groups


# -- index lines -----------------------------------------------------------------------------

def lines_in(cluster, groups):
    """``(group, line)`` for every index line in ``groups``, in index order."""
    for group in groups:
        for line in cluster.lookup_range(group.start.encode(), group.end.encode()):
            yield group, line


# -- check -----------------------------------------------------------------------------------

@dataclass
class Tally:
    captures: int = 0
    bytes: int = 0
    files: set = field(default_factory=set)

    def add(self, record):
        self.captures += 1
        self.bytes += record.length
        self.files.add(record.filename)

    @property
    def warc_files(self):
        return len(self.files)

    def as_dict(self):
        return {"captures": self.captures, "warc_files": self.warc_files, "bytes": self.bytes}


def check(cluster, inputs):
    """``(per input, total)`` ``Tally``s: what a copy would take, from the index alone.

    One pass over the merged ranges; an input's numbers count what it selects (inputs
    may overlap), the total counts each record once.
    """
    per_input = [Tally() for _ in inputs]
    total = Tally()
    for group, line in lines_in(cluster, merge_ranges(inputs)):
        record = cdxline.location(line)
        total.add(record)
        for i in group.members:
            if inputs[i].covers(line):
                per_input[i].add(record)
    return per_input, total


# -- the plan ----------------------------------------------------------------------------------

def chunk_name(name_prefix, number):
    return f"{name_prefix}-{number:05d}"


def plan_path(output):
    return storage.join(output, PLAN_DIR, "plan.json")


@dataclass
class Plan:
    output: str
    cluster: str
    inputs: list          # the selection as given
    ranges: list          # merged [start, end] key ranges
    records_per_file: int
    name_prefix: str
    chunks: list          # {"name", "records", "bytes"}
    records: int = 0
    bytes: int = 0
    warc_files: int = 0

    def chunk_paths(self):
        return [storage.join(self.output, PLAN_DIR, c["name"] + ".cdx") for c in self.chunks]

    def as_dict(self):
        return {"version": PLAN_VERSION, "cluster": self.cluster, "selection": self.inputs,
                "ranges": self.ranges, "records_per_file": self.records_per_file,
                "name_prefix": self.name_prefix, "records": self.records, "bytes": self.bytes,
                "warc_files": self.warc_files, "chunks": self.chunks}


def load_plan(output):
    """The complete plan in ``output``, or None."""
    try:
        data = json.loads(_again(lambda: storage.read_bytes(plan_path(output)), output))
    except FileNotFoundError:
        return None
    return Plan(output, data["cluster"], data["selection"], data["ranges"],
                data["records_per_file"], data["name_prefix"], data["chunks"],
                data["records"], data["bytes"], data["warc_files"])


def make_plan(cluster, location, inputs, output, records_per_file=DEFAULT_RECORDS_PER_FILE,
              name_prefix=DEFAULT_NAME_PREFIX):
    """Write the plan of copying ``inputs`` from ``cluster`` (found at ``location``) into
    ``output``: chunk files of at most ``records_per_file`` index lines, in index order,
    then ``chunks.txt`` and, last, ``plan.json``. Streams: one chunk is open at a time."""
    output, location = storage.abspath(output), storage.abspath(location)
    groups = merge_ranges(inputs)
    plan = Plan(output, location, [i.text for i in inputs], [[g.start, g.end] for g in groups],
                records_per_file, name_prefix, [])
    files = set()
    chunk = None  # [ExitStack, file, name, records, bytes]

    def close(exc_info=(None, None, None)):
        stack, _, name, records, size = chunk
        stack.__exit__(*exc_info)
        if exc_info[0] is None:
            plan.chunks.append({"name": name, "records": records, "bytes": size})

    try:
        for _, line in lines_in(cluster, groups):
            record = cdxline.location(line)
            if chunk is None:
                name = chunk_name(name_prefix, len(plan.chunks))
                stack = contextlib.ExitStack()
                fh = stack.enter_context(storage.open_atomic(
                    storage.join(output, PLAN_DIR, name + ".cdx")))
                chunk = [stack, fh, name, 0, 0]
            chunk[1].write(line)
            chunk[3] += 1
            chunk[4] += record.length
            plan.records += 1
            plan.bytes += record.length
            files.add(record.filename)
            if chunk[3] == records_per_file:
                close()
                chunk = None
        if chunk is not None:
            close()
            chunk = None
    except BaseException:
        if chunk is not None:
            close(sys.exc_info())
        raise
    plan.warc_files = len(files)
    listing = "".join(p + "\n" for p in plan.chunk_paths()).encode("utf-8")
    _again(lambda: storage.write_atomic(storage.join(output, PLAN_DIR, "chunks.txt"), listing),
           output)
    data = json.dumps(plan.as_dict(), indent=1).encode("utf-8")
    _again(lambda: storage.write_atomic(plan_path(output), data), output)  # last: complete
    with _PLANS_LOCK:
        _PLANS[output] = plan
    return plan


def _differences(plan, location, ranges, records_per_file, name_prefix):
    wanted = {"selection (its merged key ranges)": ranges, "cluster": location,
              "--records-per-file": records_per_file, "--name-prefix": name_prefix}
    have = {"selection (its merged key ranges)": plan.ranges, "cluster": plan.cluster,
            "--records-per-file": plan.records_per_file, "--name-prefix": plan.name_prefix}
    return [name for name in wanted if wanted[name] != have[name]]


def existing_plan(location, inputs, output, records_per_file=DEFAULT_RECORDS_PER_FILE,
                  name_prefix=DEFAULT_NAME_PREFIX):
    """The plan in ``output`` if it is the plan of this copy (None if there is none);
    ``PlanMismatch`` if it is another copy's, or if outputs lie there without a plan."""
    output, location = storage.abspath(output), storage.abspath(location)
    plan = load_plan(output)
    if plan is None:
        stray = [p for p in _top_files(output) if p.endswith((".cdxj", ".warc.gz"))]
        if stray:
            raise PlanMismatch(
                f"{output} holds copied files ({storage.basename(stray[0])}, ...) but no plan "
                f"({plan_path(output)}): use a new output directory")
        return None
    ranges = [[g.start, g.end] for g in merge_ranges(inputs)]
    differ = _differences(plan, location, ranges, records_per_file, name_prefix)
    if differ:
        shown = ", ".join(plan.inputs[:5]) + (f" and {len(plan.inputs) - 5} more"
                                               if len(plan.inputs) > 5 else "")
        raise PlanMismatch(
            f"{output} holds another copy (of {shown} from {plan.cluster}, "
            f"--records-per-file {plan.records_per_file}, --name-prefix {plan.name_prefix}); "
            f"this one differs in: {', '.join(differ)}. Use a new output directory, or rerun "
            "that copy with its own options")
    return plan


def ensure_plan(cluster, location, inputs, output, records_per_file=DEFAULT_RECORDS_PER_FILE,
                name_prefix=DEFAULT_NAME_PREFIX):
    """The plan of this copy in ``output``: the one there, or a new one (see ``make_plan``).
    ``cluster`` may be a callable returning it, called only when a plan is made."""
    plan = existing_plan(location, inputs, output, records_per_file, name_prefix)
    if plan is None:
        plan = make_plan(cluster() if callable(cluster) else cluster, location, inputs, output,
                         records_per_file, name_prefix)
    return plan


def _top_files(output):
    """Paths of the files directly in ``output`` (not in plan/)."""
    base = output.rstrip("/") + "/"
    return [p for p in _again(lambda: list(storage.list_files(output)), output)
            if "/" not in p[len(base):]]


# -- copying one chunk --------------------------------------------------------------------------

class _Failed(Exception):
    """A record that cannot be copied, and why."""

    def __init__(self, reason, permanent=False):
        super().__init__(reason)
        self.permanent = permanent


def source_path(warc_prefix, filename):
    """Where the record's archive is: ``filename`` under ``warc_prefix`` (a directory, or an
    ``s3://`` / ``http(s)://`` prefix), unless it is absolute itself (a URI, or an absolute
    path)."""
    if not storage.is_local(filename) or os.path.isabs(filename):
        return filename
    return storage.resolve(warc_prefix, filename)


def check_member(data, length):
    """The gzip member to write for a record read as ``data``, if it is one complete
    member of ``length`` bytes holding a WARC record (a raw record from an uncompressed
    WARC is compressed into a member of its own); else raises ``_Failed``."""
    if len(data) != length:
        raise _Failed(f"short read: {len(data)} of {length} bytes")
    if not data.startswith(b"\x1f\x8b"):
        if data.startswith(b"WARC/"):
            return zlib_member(data)
        raise _Failed("not a gzip member or a WARC record at this offset")
    inflate = zlib.decompressobj(wbits=31)
    try:
        head = inflate.decompress(data, HEAD_BYTES)
        while inflate.unconsumed_tail and not inflate.eof:  # zlib checks the CRC and length
            inflate.decompress(inflate.unconsumed_tail, 1 << 20)
    except zlib.error as exc:
        raise _Failed(f"corrupt gzip member: {exc}") from None
    if not inflate.eof:
        raise _Failed("incomplete gzip member (cut short)")
    if inflate.unused_data or inflate.unconsumed_tail:
        raise _Failed("more than one gzip member in the record's bytes")
    if head.startswith(b"WARC/"):
        return data
    first = head.split(b"\n", 1)[0].split(b" ")
    if len(first) >= 5 and first[-1].strip().isdigit():
        raise _Failed("an ARC record: ARC records are not copied into WARC files", permanent=True)
    raise _Failed("the gzip member at this offset does not hold a WARC record")


def zlib_member(data):
    compress = zlib.compressobj(6, zlib.DEFLATED, 31)
    return compress.compress(data) + compress.flush()


def fetch_record(path, offset, length, retries=DEFAULT_RETRIES):
    """The gzip member of one record, read with one ranged read (again on transient errors,
    ``retries`` more times, as ``retry.COPY`` says); raises ``_Failed`` with the last reason."""
    def attempt():
        try:
            return check_member(storage.read_range(path, offset, length), length)
        except FileNotFoundError:
            raise _Failed(f"source archive not found: {path}", permanent=True) from None
        except retry.PERMANENT as exc:
            raise _Failed(f"cannot read {path}: {exc.strerror or exc}", permanent=True) from None
        except _Failed:
            raise
        except Exception as exc:  # what the S3/HTTP clients raise for a failed or cut read
            raise _Failed(f"{type(exc).__name__}: {exc}") from exc

    try:
        return retry.call(attempt, retry.COPY.with_attempts(retries + 1),
                          lambda exc: isinstance(exc, _Failed) and not exc.permanent)
    except _Failed as exc:
        if exc.permanent or not retries:
            raise
        raise _Failed(f"after {retries + 1} attempts: {exc}") from None


def _warcinfo(writer, filename, info):
    fields = {"software": SOFTWARE, "format": "WARC File Format 1.0"}
    fields.update(info or {})
    writer.write_record(writer.create_warcinfo_record(filename, fields))


def output_paths(output, name):
    base = storage.resolve(output, name)
    return {"warc": base + ".warc.gz", "cdxj": base + ".cdxj", "failures": base + ".failures.json"}


def is_complete(output, name):
    """Whether the output ``name`` is there whole: its index, and no failures."""
    paths = output_paths(output, name)
    return _again(lambda: storage.exists(paths["cdxj"]) and not storage.exists(paths["failures"]),
                  output)


def copy_chunk(lines, warc_prefix, output, name, threads=DEFAULT_THREADS, warcinfo=None,
               retries=DEFAULT_RETRIES, progress=None):
    """Copy the records of ``lines`` (index lines) into ``output/name.warc.gz``; write its
    ``.failures.json`` (if any record could not be copied) and then its ``.cdxj``.

    ``threads`` reads are in flight at once; records are written in the order of
    ``lines``. ``warcinfo``: more fields for the warcinfo record. ``progress(records,
    bytes)`` is called as records are done (copied or failed). Returns a status dict.
    """
    from warcio.warcwriter import WARCWriter
    output = storage.abspath(output)
    paths = output_paths(output, name)
    filename = name + ".warc.gz"
    if storage.is_local(warc_prefix):
        warc_prefix = storage.abspath(warc_prefix)  # tasks may run in another directory
        retries = 0  # a local file reads the same the next time
    # what an earlier attempt at this output left when it was killed
    storage.remove_leftovers(paths.values())
    staged = storage.staging_path(paths["warc"])
    status = {"name": name, "records": 0, "copied": 0, "failed": 0, "bytes": 0,
              "index_lines": 0, "skipped": False, "failures": None}
    failures = []
    done = [0, 0]

    def fetch(record):
        if record is None:
            return None
        try:
            return fetch_record(source_path(warc_prefix, record.filename), record.offset,
                                record.length, retries)
        except _Failed as exc:
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
        with open(staged, "wb") as tmp:
            writer = WARCWriter(tmp, gzip=True)
            _warcinfo(writer, filename, warcinfo)
            with ThreadPoolExecutor(max(1, threads)) as pool:
                pending = collections.deque()

                def finish():
                    (line, record), future = pending.popleft()
                    result = future.result()
                    status["records"] += 1
                    if isinstance(record, Exception) or isinstance(result, Exception):
                        reason = str(record if isinstance(record, Exception) else result)
                        failures.append(_failure(line, record, warc_prefix, reason))
                    else:
                        tmp.write(result)
                        status["copied"] += 1
                        status["bytes"] += record.length
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
        index = cdx.index_file(staged, filename, "cdxj", opener=lambda p: open(p, "rb"))
        if index.errors:
            raise RuntimeError(f"{staged} (to become {paths['warc']}) does not read back: "
                               f"{index.errors[0]}")
        status["index_lines"] = len(index.lines)
        _again(lambda: storage.publish(staged, paths["warc"]), output)
        if failures:
            status["failed"] = len(failures)
            status["failures"] = paths["failures"]
            report = {"output": paths["warc"], "failed": len(failures), "records": failures}
            data = json.dumps(report, indent=1).encode("utf-8")
            _again(lambda: storage.write_atomic(paths["failures"], data), output)
        # the index last: it marks the output complete (with no failures file)
        data = "".join(index.lines).encode("utf-8")
        _again(lambda: storage.write_atomic(paths["cdxj"], data), output)
        if not failures:
            _again(lambda: storage.remove(paths["failures"]), output)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)
    return status


def _failure(line, record, warc_prefix, reason):
    entry = {"line": line.decode("utf-8", "replace").rstrip("\r\n"), "reason": reason}
    if isinstance(record, cdxline.Location):
        entry.update(source=source_path(warc_prefix, record.filename), offset=record.offset,
                     length=record.length)
    return entry


# -- one task: one planned chunk ---------------------------------------------------------------

def _plan_of(output):
    """The plan of ``output``, read once per process (a task may run several chunks)."""
    with _PLANS_LOCK:
        if output not in _PLANS:
            plan = load_plan(output)
            if plan is None:
                raise FileNotFoundError(f"no copy plan at {plan_path(output)}: make it first "
                                        "(webarchive-index copy plan)")
            _PLANS[output] = plan
        return _PLANS[output]


def warcinfo_fields(plan, warc_prefix, chunk_path):
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


def run_chunk(chunk_path, output, warc_prefix, threads=DEFAULT_THREADS, retries=DEFAULT_RETRIES,
              progress_dir=None, on_progress=None):
    """The work of one task: copy the planned chunk ``chunk_path`` (``OUT/plan/NAME.cdx``)
    into ``output``, unless its output is complete already; its status dict.

    ``progress_dir``: a local directory where progress is reported (see ``read_progress``);
    ``on_progress(records, bytes)``: called as records are done, too.
    """
    output = storage.abspath(output)
    name = storage.basename(chunk_path).removesuffix(".cdx")
    plan = _plan_of(output)
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
        return {"name": name, "records": planned["records"], "copied": planned["records"],
                "failed": 0, "bytes": planned["bytes"], "index_lines": None, "skipped": True,
                "failures": None}
    lines = _again(lambda: storage.read_bytes(chunk_path), chunk_path).splitlines(True)
    status = copy_chunk(lines, warc_prefix, output, name, threads,
                        warcinfo_fields(plan, warc_prefix, chunk_path), retries, progress)
    progress(status["records"], planned["bytes"], True)
    return status


def copy_chunks(engine, chunk_paths, output, warc_prefix, threads=DEFAULT_THREADS,
                retries=DEFAULT_RETRIES, progress_dir=None):
    """Copy the planned ``chunk_paths`` as tasks of ``engine`` (``engines.open_engine``),
    one ``run_chunk`` each; the status of each chunk."""
    chunk_paths = list(chunk_paths)
    if not chunk_paths:
        return []
    # tasks run in directories of their own
    return engine.copy(chunk_paths, storage.abspath(output), storage.abspath(warc_prefix),
                       threads, retries, progress_dir)


# -- what an output holds ------------------------------------------------------------------------

@dataclass
class Survey:
    plan: Plan
    complete: list = field(default_factory=list)        # names
    with_failures: list = field(default_factory=list)   # names
    missing: list = field(default_factory=list)         # names
    copied: int = 0
    copied_bytes: int = 0
    failed: int = 0
    reports: list = field(default_factory=list)         # failures.json paths

    @property
    def done(self):
        return not self.with_failures and not self.missing


def survey(output, plan=None):
    """What ``output`` holds of its plan: complete outputs, outputs with failures (and
    how many records failed), outputs not written."""
    output = storage.abspath(output)
    plan = plan or load_plan(output)
    if plan is None:
        raise FileNotFoundError(f"no copy plan at {plan_path(output)}")
    present = {storage.basename(p) for p in _top_files(output)}
    result = Survey(plan)
    for chunk in plan.chunks:
        name = chunk["name"]
        paths = output_paths(output, name)
        if name + ".failures.json" in present:
            report = json.loads(_again(lambda path=paths["failures"]: storage.read_bytes(path),
                                       output))
            failed = report["records"]
            result.with_failures.append(name)
            result.reports.append(paths["failures"])
            result.failed += len(failed)
            result.copied += chunk["records"] - len(failed)
            result.copied_bytes += chunk["bytes"] - sum(f.get("length", 0) for f in failed)
        elif name + ".cdxj" in present:
            result.complete.append(name)
            result.copied += chunk["records"]
            result.copied_bytes += chunk["bytes"]
        else:
            result.missing.append(name)
    return result
