"""The plan of a copy: the selected index lines, in index order, in chunks of at most
``records_per_file`` lines, one per output file, so that chunk numbers (and output names)
depend only on the selection::

    OUT/plan/extract-00000.cdx    the index lines of output 0
    OUT/plan/chunks.txt           the chunk files, one URI a line: the copy job's input
    OUT/plan/plan.json            selection, merged key ranges, cluster, per-chunk totals;
                                  written last (a plan without it is made again)

The records may instead be those a CSV file names (``csvrecords``: Common Crawl's CSV of
a SQL result), in its order; the plan then remembers the file and its SHA-1.

A rerun reuses the plan; a different selection (other key ranges, cluster, records CSV,
``records_per_file`` or name prefix) or other WARC files (format, level, dictionary) in the
same output raise ``PlanMismatch``.
"""
import contextlib
import json
import sys
import threading
from dataclasses import dataclass

from ..cdx import cdxline
from .. import storage
from ..options import (DEFAULT_LEVELS, DEFAULT_NAME_PREFIX, DEFAULT_RECORDS_PER_FILE, FILE_NAME,
                       FILE_NAME_HELP, UsageError, compression_level)
from . import csvrecords
from .fetch import again, check_dictionary
from .selection import check_source, is_arc, lines_in, merge_ranges, read_selection
from ..inputs.discovery import InputError, check_output as check_not_input
from ..zipnum.reader import open_cluster

PLAN_VERSION = 1
PLAN_DIR = "plan"

# Plans read by this process, by output (a task may run several chunks of one plan).
_PLANS = {}
_PLANS_LOCK = threading.Lock()


# How copy writes its WARC files unless told otherwise (and plans made before it was said)
GZ_OUTPUT = {"format": "gz", "level": DEFAULT_LEVELS["gz"], "dictionary": None}


class PlanMismatch(ValueError):
    """The output holds the plan of another selection."""


def warc_output(output_format="gz", level=None, dictionary=None):
    """How copy writes its WARC files, as a plan holds it: the format ("gz" or "zst"), the
    level of what it compresses, the dictionary of every .warc.zst (an absolute path or URI;
    None: one trained on each file's records); ``UsageError`` for what cannot work."""
    if dictionary and output_format != "zst":
        raise UsageError("--dictionary goes with --output-format zst")
    return {"format": output_format, "level": compression_level(output_format, level),
            "dictionary": check_dictionary(dictionary, "--dictionary")}


def chunk_name(name_prefix, number):
    return f"{name_prefix}-{number:05d}"


def plan_path(output):
    return storage.join(output, PLAN_DIR, "plan.json")


def listing_path(output):
    """The list of a plan's chunk files: the copy job's input."""
    return storage.join(output, PLAN_DIR, "chunks.txt")


@dataclass
class Plan:
    output: str
    cluster: str          # None for the records of a CSV
    inputs: list          # the selection as given
    ranges: list          # merged [start, end] key ranges
    records_per_file: int
    name_prefix: str
    chunks: list          # {"name", "records", "bytes"}
    records: int = 0
    bytes: int = 0
    warc_files: int = 0
    arc_records: int = 0  # selected, and left out: records of ARC files
    records_csv: str = None   # the CSV whose records these are, and its SHA-1
    records_sha1: str = None
    warc: dict = None     # how the WARC files are written (``warc_output``)
    access: str = None    # the access rules the selection went through (their digest)

    def __post_init__(self):
        self.warc = self.warc or GZ_OUTPUT

    def chunk_paths(self):
        return [storage.join(self.output, PLAN_DIR, c["name"] + ".cdx") for c in self.chunks]

    def as_dict(self):
        return {"version": PLAN_VERSION, "cluster": self.cluster, "selection": self.inputs,
                "ranges": self.ranges, "records_csv": self.records_csv,
                "records_sha1": self.records_sha1, "records_per_file": self.records_per_file,
                "name_prefix": self.name_prefix, "records": self.records, "bytes": self.bytes,
                "warc_files": self.warc_files, "arc_records": self.arc_records,
                "warc": self.warc, "access": self.access, "chunks": self.chunks}

    def identity(self):
        """What tells this copy from another in the same output, by what an option names."""
        return {"selection (its merged key ranges)": self.ranges, "cluster": self.cluster,
                "--records-csv": self.records_csv, "the records CSV (its SHA-1)": self.records_sha1,
                "--records-per-file": self.records_per_file, "--name-prefix": self.name_prefix,
                "--output-format": self.warc["format"], "--level": self.warc["level"],
                "--dictionary": self.warc["dictionary"],
                "the access rules (--acl, --acl-user, --embargo...)": self.access}

    def source(self):
        """Where the records come from, for people."""
        if self.records_csv:
            return f"the records of {self.records_csv}"
        shown = ", ".join(self.inputs[:5]) + (f" and {len(self.inputs) - 5} more"
                                              if len(self.inputs) > 5 else "")
        return f"{shown} from {self.cluster}"


def load_plan(output):
    """The complete plan in ``output``, or None. ``PlanMismatch`` for a plan whose names
    would put files elsewhere than in ``output`` (it was not written here)."""
    try:
        data = json.loads(again(lambda: storage.read_bytes(plan_path(output)), output))
    except FileNotFoundError:
        return None
    prefix, chunks = data["name_prefix"], data["chunks"]
    if not FILE_NAME.fullmatch(prefix) or [c["name"] for c in chunks] != \
            [chunk_name(prefix, i) for i in range(len(chunks))]:
        raise PlanMismatch(f"{plan_path(output)} names its outputs otherwise than a plan does "
                           f"({prefix!r}...): it was not made by a copy; use a new output directory")
    return Plan(output, data["cluster"], data["selection"], data["ranges"],
                data["records_per_file"], prefix, chunks, data["records"], data["bytes"],
                data["warc_files"], data.get("arc_records", 0), data.get("records_csv"),
                data.get("records_sha1"), data.get("warc"), data.get("access"))


def _selection_plan(location, inputs, output, records_per_file, name_prefix, warc, access=None):
    """The plan (without chunks) of copying ``inputs`` from the cluster at ``location``
    (through the access rules of digest ``access``, if any)."""
    return Plan(storage.abspath(output), storage.abspath(location), [i.text for i in inputs],
                [[g.start, g.end] for g in merge_ranges(inputs)], records_per_file,
                name_prefix, [], warc=warc, access=access)


def _csv_plan(records_csv, output, records_per_file, name_prefix, warc):
    """The plan (without chunks) of copying the records of the CSV ``records_csv``."""
    return Plan(storage.abspath(output), None, [], [], records_per_file, name_prefix, [],
                records_csv=storage.abspath(records_csv),
                records_sha1=csvrecords.digest(records_csv), warc=warc)


def make_plan(cluster, location, inputs, output, records_per_file=DEFAULT_RECORDS_PER_FILE,
              name_prefix=DEFAULT_NAME_PREFIX, warc=GZ_OUTPUT, access=None):
    """Write the plan of copying ``inputs`` from ``cluster`` (found at ``location``) into
    ``output`` (WARC files written as ``warc`` says: see ``warc_output``): chunk files of at most ``records_per_file`` index lines, in index order,
    then ``chunks.txt`` and, last, ``plan.json``. Streams: one chunk is open at a time.
    Records of ARC files are left out (counted in ``arc_records``)."""
    plan = _selection_plan(location, inputs, output, records_per_file, name_prefix, warc, access)
    groups = merge_ranges(inputs)
    return _write(plan, ((line, cdxline.location(line)) for _, line in lines_in(cluster, groups)))


def make_csv_plan(records_csv, output, records_per_file=DEFAULT_RECORDS_PER_FILE,
                  name_prefix=DEFAULT_NAME_PREFIX, warc=GZ_OUTPUT):
    """Write the plan of copying the records the CSV ``records_csv`` names, in its order
    (see ``make_plan``)."""
    plan = _csv_plan(records_csv, output, records_per_file, name_prefix, warc)
    return _write(plan, csvrecords.chunk_lines(records_csv))


def _write(plan, records):
    """Write ``plan``'s chunks of ``records``, ``(line, cdxline.Location)`` pairs, then its
    listing and ``plan.json``; the plan."""
    output, records_per_file, name_prefix = plan.output, plan.records_per_file, plan.name_prefix
    if not FILE_NAME.fullmatch(name_prefix):
        raise UsageError(f"--name-prefix {name_prefix!r}: expected {FILE_NAME_HELP}")
    storage.remove_temp_files(storage.join(output, PLAN_DIR))  # of a plan killed half-made
    files = set()
    chunk = None  # [ExitStack, file, name, records, bytes]

    def close(exc_info=(None, None, None)):
        stack, _, name, records, size = chunk
        stack.__exit__(*exc_info)
        if exc_info[0] is None:
            plan.chunks.append({"name": name, "records": records, "bytes": size})

    try:
        for line, record in records:
            if is_arc(record):
                plan.arc_records += 1
                continue
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
    again(lambda: storage.write_atomic(listing_path(output), listing), output)
    data = json.dumps(plan.as_dict(), indent=1).encode("utf-8")
    again(lambda: storage.write_atomic(plan_path(output), data), output)  # last: complete
    with _PLANS_LOCK:
        _PLANS[output] = plan
    return plan


def existing_plan(location, inputs, output, records_per_file=DEFAULT_RECORDS_PER_FILE,
                  name_prefix=DEFAULT_NAME_PREFIX, warc=GZ_OUTPUT, access=None):
    """The plan in ``output`` if it is the plan of this copy (None if there is none);
    ``PlanMismatch`` if it is another copy's, or if outputs lie there without a plan."""
    return _existing(_selection_plan(location, inputs, output, records_per_file, name_prefix,
                                     warc, access))


def _existing(wanted):
    plan = load_plan(wanted.output)
    if plan is None:
        stray = [p for p in output_files(wanted.output) if p.endswith((".cdxj", ".warc.gz", ".warc.zst"))]
        if stray:
            raise PlanMismatch(
                f"{wanted.output} holds copied files ({storage.basename(stray[0])}, ...) but no "
                f"plan ({plan_path(wanted.output)}): use a new output directory")
        return None
    have, want = plan.identity(), wanted.identity()
    differ = [name for name in want if want[name] != have[name]]
    if differ:
        raise PlanMismatch(
            f"{wanted.output} holds another copy (of {plan.source()}, --records-per-file "
            f"{plan.records_per_file}, --name-prefix {plan.name_prefix}, --output-format "
            f"{plan.warc['format']}, --level {plan.warc['level']}"
            + (f", --dictionary {plan.warc['dictionary']}" if plan.warc["dictionary"] else "")
            + f"); this one differs "
            f"in: {', '.join(differ)}. Use a new output directory, or rerun that copy with "
            "its own options")
    return plan


def ensure_plan(cluster, location, inputs, output, records_per_file=DEFAULT_RECORDS_PER_FILE,
                name_prefix=DEFAULT_NAME_PREFIX, warc=GZ_OUTPUT, access=None):
    """The plan of this copy in ``output``: the one there, or a new one (see ``make_plan``).
    ``cluster`` may be a callable returning it, called only when a plan is made."""
    plan = existing_plan(location, inputs, output, records_per_file, name_prefix, warc, access)
    if plan is None:
        plan = make_plan(cluster() if callable(cluster) else cluster, location, inputs, output,
                         records_per_file, name_prefix, warc, access)
    return plan


def ensure_csv_plan(records_csv, output, records_per_file=DEFAULT_RECORDS_PER_FILE,
                    name_prefix=DEFAULT_NAME_PREFIX, warc=GZ_OUTPUT):
    """The plan of copying the records of ``records_csv`` in ``output``: the one there, or
    a new one (see ``make_csv_plan``)."""
    wanted = _csv_plan(records_csv, output, records_per_file, name_prefix, warc)
    return _existing(wanted) or _write(wanted, csvrecords.chunk_lines(records_csv))


def copy_planner(options, through=None):
    """Check the copy ``options`` describe (a ``CopyOptions``, or parsed arguments with its
    attributes), raising ``SelectionError`` or ``UsageError`` before anything is written;
    the function (of no arguments) that gives its plan: the one in ``options.output``, or
    a new one (``PlanMismatch`` if the output holds another copy's). ``through``: a
    function of the cluster that gives what the plan reads instead (the captures access
    rules let out), its ``digest`` naming the rules in the plan."""
    check_source(options.location, options.domains, options.domains_file, options.records_csv)
    warc = warc_output(options.output_format, options.level, options.dictionary)
    if options.records_csv and through is not None:
        raise UsageError("access rules (--acl, --embargo) go with a cluster, not --records-csv: "
                         "a CSV's records have no timestamps to judge them by")
    if options.records_csv:
        check_output(options.output, [options.records_csv])
        return lambda: ensure_csv_plan(options.records_csv, options.output,
                                       options.records_per_file, options.name_prefix, warc)
    inputs = read_selection(options.domains, options.domains_file)
    check_output(options.output, [p for p in (options.location, *options.domains_file) if p])
    return lambda: ensure_plan(lambda: (through or _itself)(open_cluster(options.location)), options.location,
                               inputs, options.output, options.records_per_file,
                               options.name_prefix, warc, getattr(through, "digest", None))


def _itself(cluster):
    return cluster


def output_files(output):
    """Paths of the files directly in ``output`` (not in plan/)."""
    base = output.rstrip("/") + "/"
    return [p for p in again(lambda: list(storage.list_files(output)), output)
            if "/" not in p[len(base):]]


def plan_of(output):
    """The plan of ``output``, read once per process (a task may run several chunks)."""
    with _PLANS_LOCK:
        if output not in _PLANS:
            plan = load_plan(output)
            if plan is None:
                raise FileNotFoundError(f"no copy plan at {plan_path(output)}: make it first "
                                        "(webarchive-index copy plan)")
            _PLANS[output] = plan
        return _PLANS[output]


def check_output(output, inputs=()):
    """``UsageError`` unless copies can be written to ``output``: a local directory, or a
    store with ranged reads that tasks write to (S3); not one of the files ``inputs``,
    nor inside a published cluster."""
    if not storage.is_local(output) and not (storage.is_writable(output)
                                             and storage.reads_ranges(output)):
        raise UsageError(f"-o/--output {output}: expected a local directory or s3://bucket/prefix")
    try:
        check_not_input(output, inputs)
    except InputError as exc:
        raise UsageError(f"-o/--output: {exc}") from None
