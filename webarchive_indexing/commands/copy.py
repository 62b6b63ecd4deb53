"""A copy through an engine, and what its output holds.

    result = copy(CopyOptions(location="s3://bucket/index", domains=["example.com"],
                              output="out", warc_prefix="s3://commoncrawl/", runner="spark"))
    result.after.done          # every record copied
    survey("out")              # what is complete, what failed, what is missing

``copy`` is ``webarchive-index copy copy``: it checks its options, plans the copy (or
reuses the plan in the output), copies every chunk not complete yet as tasks of the
engine (``engines``), one ``write.run_chunk`` each, showing progress, and surveys the
output.
"""
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace

from ..storage import lock
from .. import storage
from ..engines import open_engine
from ..options import UsageError, check_engine
from ..util.progress import Progress
from ..copy.csvrecords import check as check_csv
from ..copy.fetch import again, check_dictionary, check_prefix
from ..copy.plan import Plan, copy_planner, load_plan, output_files, plan_path
from ..copy.selection import check, check_source, read_selection
from ..copy.write import ChunkSettings, output_paths, read_progress
from ..api.access import permitting
from ..zipnum.reader import open_cluster


def count(settings):
    """``copy check``: what a copy of ``settings`` (its arguments) would take, from the
    index alone: ``[((input, kind), totals)]`` per input, the total (each record once), and
    what the access rules withheld (``{"excluded", "blocked"}``, or None without rules)."""
    check_source(settings.location, settings.domains, settings.domains_file,
                 settings.records_csv)
    through = permitting(settings)
    if settings.records_csv:
        if through is not None:
            raise UsageError("access rules (--acl, --embargo) go with a cluster, not "
                             "--records-csv")
        total = check_csv(settings.records_csv)
        return [((settings.records_csv, "records"), total)], total, None
    selection = read_selection(settings.domains, settings.domains_file)
    cluster = open_cluster(settings.location)
    if through is not None:
        cluster = through(cluster)
    per_input, total = check(cluster, selection)
    withheld = cluster.withheld if through is not None else None
    return [((i.text, i.kind), t) for i, t in zip(selection, per_input)], total, withheld


def write_plan(settings):
    """``copy plan``: the plan of the copy ``settings`` (its arguments) describe, written
    into its output (or the one there kept)."""
    planner = copy_planner(settings, permitting(settings))
    with lock.hold(storage.abspath(settings.output), "copy plan"):
        return planner()


def copy_chunks(engine, chunk_paths, settings):
    """Copy the planned ``chunk_paths`` as tasks of ``engine`` (``engines.open_engine``),
    one ``run_chunk`` each, as ``settings`` (a ``write.ChunkSettings``) say; the
    ``ChunkStatus`` of each chunk. ``settings.zstd_dictionary`` is absolute (see
    ``fetch.check_dictionary``)."""
    # tasks run in directories of their own
    return engine.copy(chunk_paths, replace(settings, output=storage.abspath(settings.output),
                                            warc_prefix=storage.abspath(settings.warc_prefix)))


@dataclass
class Survey:
    plan: Plan
    complete: list = field(default_factory=list)        # names
    with_failures: list = field(default_factory=list)   # names
    missing: list = field(default_factory=list)         # names
    copied: int = 0
    copied_bytes: int = 0
    failed: int = 0
    failed_for_good: int = 0                            # that another attempt fails too
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
    present = {storage.basename(p) for p in output_files(output)}
    result = Survey(plan)
    for chunk in plan.chunks:
        name = chunk["name"]
        paths = output_paths(output, name)
        if name + ".failures.json" in present:
            report = json.loads(again(lambda path=paths["failures"]: storage.read_bytes(path),
                                       output))
            failed = report["records"]
            result.with_failures.append(name)
            result.reports.append(paths["failures"])
            result.failed += len(failed)
            result.failed_for_good += sum(1 for f in failed if f.get("permanent"))
            result.copied += chunk["records"] - len(failed)
            result.copied_bytes += chunk["bytes"] - sum(f.get("length", 0) for f in failed)
        elif name + ".cdxj" in present:
            result.complete.append(name)
            result.copied += chunk["records"]
            result.copied_bytes += chunk["bytes"]
        else:
            result.missing.append(name)
    return result


@dataclass
class CopyResult:
    """What ``copy`` did: its plan, what the output held before and after (None when
    there was nothing to copy), the failure of a job that failed whole, the seconds."""
    plan: Plan
    before: Survey = None
    after: Survey = None
    failure: Exception = None
    seconds: float = 0.0

    @property
    def done(self):
        return self.failure is None and (self.after is None or self.after.done)


def copy(options, planned=None):
    """Plan (or reuse the plan in ``options.output``) and copy every planned record that is
    not copied yet, as ``options`` (a ``CopyOptions``) say; a ``CopyResult``. The records
    are those ``options.domains`` and ``domains_file`` select in the cluster at
    ``options.location``, or those the CSV ``options.records_csv`` names.

    ``planned(plan)`` is called once the plan is known, before anything is copied.
    Raises ``options.UsageError``, ``selection.SelectionError`` or ``plan.PlanMismatch``
    for options that cannot work, before anything is written; a job that fails whole is
    reported in the result, with what the output holds. ``lock.Busy`` if another copy
    writes into the output.
    """
    started = time.monotonic()
    check_prefix(options.warc_prefix)
    check_engine(options, strict=True)
    planner = copy_planner(options, permitting(options))
    settings = ChunkSettings.of(options,
                                zstd_dictionary=check_dictionary(options.zstd_dictionary))
    with lock.hold(storage.abspath(options.output), "copy copy"):
        return _copy(options, planner, planned, started, settings)


def _copy(options, planner, planned, started, settings):
    plan = planner()
    if planned:
        planned(plan)
    if not plan.chunks:
        return CopyResult(plan, seconds=time.monotonic() - started)
    before = survey(plan.output, plan)
    todo = [path for path, chunk in zip(plan.chunk_paths(), plan.chunks)
            if chunk["name"] not in before.complete]
    complete = [c for c in plan.chunks if c["name"] in before.complete]
    base = (sum(c["records"] for c in complete), sum(c["bytes"] for c in complete))
    progress = Progress(enabled=options.progress)
    work = tempfile.mkdtemp(prefix="webarchive-copy-progress-")
    failure = None

    def done():
        records, size = read_progress(work)
        return base[0] + records, base[1] + size

    with open_engine(options.runner, options) as engine:
        try:
            # progress files only where the tasks run on this machine
            progress_dir = work if todo and engine.tasks_here else None
            progress.transfer("copying", done, plan.records, plan.bytes)
            copy_chunks(engine, todo, replace(settings, output=plan.output,
                                              progress_dir=progress_dir))
        except Exception as exc:  # a task that failed whole: say so, then show what is there
            failure = exc
        finally:
            progress.done()
            shutil.rmtree(work, ignore_errors=True)
    return CopyResult(plan, before, survey(plan.output, plan), failure,
                      time.monotonic() - started)
