"""Settings and statuses as dataclasses across the engine boundary (``util/wire.py``):
an option a task reads goes from the option table to the task through its settings
object on every engine, naming no engine; statuses go over the wire and come back equal."""
import ast
import dataclasses
import glob
import json
import os
from dataclasses import dataclass

import pytest

from helpers import REAL
from webarchive_indexing.jobs import index_warcs
from webarchive_indexing.jobs.index_warcs import IndexWarcsJob
from webarchive_indexing.jobs.remote_copy import RemoteCopyJob
from webarchive_indexing import options
from webarchive_indexing.build import tasks
from webarchive_indexing.build.tasks import Indexing, IndexStatus
from webarchive_indexing.copy import ChunkSettings, ChunkStatus
from webarchive_indexing.engines import ENGINES, open_engine
from webarchive_indexing.engines.local_engine import LocalSettings
from webarchive_indexing.engines.mrjob_engine import MrjobSettings
from webarchive_indexing.engines.spark_engine import SparkSettings
from webarchive_indexing.inputs.discovery import expand
from webarchive_indexing.options import BuildOptions, CopyOptions
from webarchive_indexing.util.wire import option_field

PACKAGE = os.path.dirname(options.__file__)

# an option no command has: declared here, as a new one would be in options.py
MARK = options.Option("--test-mark", metavar="WORD", help="a word the index task is handed")


@dataclass(frozen=True)
class Marked(Indexing):
    """``Indexing`` with one more field, as a new indexing option adds one."""
    test_mark: str = option_field(MARK)


def observe(item, settings):
    """A task that says what it was handed."""
    return item, settings


def archives():
    return expand([os.path.join(REAL, "webrecorder+warcio__example.warc.gz"),
                   os.path.join(REAL, "iipc+webarchive-commons__IAH-urls-wget.warc.gz")]).archives


def test_a_new_option_reaches_the_index_task_through_the_mrjob_engine_and_its_job(
        tmp_path, monkeypatch):
    """The engine and the job are not told about the option: the engine hands the job the
    settings as a command line, the job declares the options of its settings class and
    reads them back into one object for its task."""
    seen = []

    def index_archive(path, name, cdx_dir, settings):
        seen.append(settings)
        return IndexStatus(name, path, os.path.join(cdx_dir, name))

    monkeypatch.setattr(index_warcs, "Indexing", Marked)
    monkeypatch.setattr(index_warcs, "index_archive", index_archive)
    given = Marked(cdx_format="cdx11", skip_existing=False, on_error="skip", test_mark="w1")
    with open_engine("inline", BuildOptions()) as engine:
        statuses = engine.index(archives(), str(tmp_path / "cdx"), given)
    assert seen == [given, given]
    assert sorted(s.name for s in statuses) == sorted(a.name for a in archives())


@pytest.mark.parametrize("name", ["local", "inline"])
def test_copy_settings_reach_each_task_whole(tmp_path, name):
    """Every engine's tasks get the settings object as it was made (a subclass with a
    field of its own too), in processes of their own on the local engine."""
    settings = ChunkSettings(str(tmp_path), "s3://bucket/", threads=3, retries=0,
                             zstd_dictionary="/d.dict")
    with open_engine(name, BuildOptions(workers=2)) as engine:
        if name == "local":
            marked = Marked(test_mark="w2")
            assert engine.each("x", observe, ["a", "b", "c"], marked) == [
                ("a", marked), ("b", marked), ("c", marked)]
        else:
            assert engine.copy([], settings) == []  # nothing to do: no job
    assert ChunkSettings.parsed(RemoteCopyJob(args=settings.command_line() + ["x"]).options) \
        == settings


@pytest.mark.parametrize("settings", [
    Indexing(),
    Indexing(cdx_format="cdx11", cdx_fields="cc", skip_existing=False, on_error="skip",
             zstd_dictionary="/x/d.dict")])
def test_index_settings_go_to_the_job_and_come_back_equal(settings):
    job = IndexWarcsJob(args=["--cdx-dir", "/c", *settings.command_line(), "manifest.txt"])
    assert Indexing.parsed(job.options) == settings


def test_copy_settings_go_to_the_job_and_come_back_equal():
    for settings in (ChunkSettings("/out", "/warcs"),
                     ChunkSettings("s3://b/out", "s3://b/", threads=1, retries=0,
                                   progress_dir="/p", zstd_dictionary="s3://b/d.dict")):
        job = RemoteCopyJob(args=[*settings.command_line(), "chunks.txt"])
        assert ChunkSettings.parsed(job.options) == settings


def test_settings_are_made_from_the_options_objects():
    build = BuildOptions(cdx_format="cdx11", cdx_fields="cc", skip_existing=False,
                         zstd_dictionary="/d", on_error="skip")
    assert Indexing.of(build) == Indexing("cdx11", "cc", False, "skip", "/d")
    # what an options object lacks keeps its default; what it has that is no field is not read
    assert Indexing.of(CopyOptions(zstd_dictionary="/d")) == Indexing(zstd_dictionary="/d")
    copy = CopyOptions(output="o", warc_prefix="p/", threads=2, retries=1)
    assert ChunkSettings.of(copy, progress_dir="/p") == ChunkSettings("o", "p/", 2, 1, "/p")


def test_each_engine_makes_its_own_settings():
    build = BuildOptions(workers=3, fan_in=9, work_dir="/w", shards=4, remove=["a/*"],
                         mrjob_conf="m.conf", spark_master="local[1]", archives_per_task=2,
                         cdx_bytes_per_task=5, verbose=True)
    expected = {"local": LocalSettings(True, 3, 9, "/w", 4, ["a/*"]),
                "mrjob": MrjobSettings(True, "m.conf"),
                "spark": SparkSettings(True, "local[1]", 2, 5, None)}
    for name in ENGINES:  # (the Spark engine starts no context until a step runs)
        with open_engine(name, build) as engine:
            assert engine.settings == expected[ENGINES[name].removesuffix("_engine")]
    # a copy has no shards nor --remove: the local engine's defaults
    with open_engine("local", CopyOptions(workers=2)) as engine:
        assert engine.settings == LocalSettings(workers=2)
        assert engine.shards == 1 and engine.remove == []


def test_index_status_goes_over_the_wire_and_comes_back_equal(tmp_path):
    """What the index job writes (as_dict, JSON) reads back (from_dict) as the status the
    local engine returns for the same archive."""
    found = archives()
    with open_engine("local", BuildOptions(workers=2)) as engine:
        local = engine.index(found, str(tmp_path / "a"), Indexing(on_error="skip"))
    with open_engine("inline", BuildOptions()) as engine:
        job = engine.index(found, str(tmp_path / "b"), Indexing(on_error="skip"))
    assert all(isinstance(s, IndexStatus) for s in local + job)

    def same_place(status):
        return dataclasses.replace(status, cdx=os.path.relpath(status.cdx, tmp_path)[2:])

    assert sorted(map(same_place, local), key=lambda s: s.name) == \
        sorted(map(same_place, job), key=lambda s: s.name)
    for status in local:
        assert IndexStatus.from_dict(json.loads(json.dumps(status.as_dict()))) == status
        assert list(status.as_dict()) == ["name", "path", "cdx", "skipped", "stale", "source",
                                          "records", "lines", "bytes", "errors", "warnings"]
    assert sum(s.lines for s in local) == 21


def test_a_status_from_another_version_is_refused():
    status = ChunkStatus("extract-00000", records=3, copied=2, failed=1, failures="f.json")
    assert ChunkStatus.from_dict(json.loads(json.dumps(status.as_dict()))) == status
    with pytest.raises(TypeError):
        ChunkStatus.from_dict({**status.as_dict(), "renamed": 1})


def test_no_engine_names_a_setting_of_the_tasks():
    """An option that a task reads (a field of its settings) is handed on whole by every
    engine and named by none, so that a new one touches no engine. (``on_error`` is also
    the engine interface's own for index inputs: ``read_indexes``.)"""
    fields = {f.name for cls in (Indexing, ChunkSettings) for f in dataclasses.fields(cls)}
    fields -= {"on_error"}
    for path in glob.glob(os.path.join(PACKAGE, "engines", "*.py")):
        tree = ast.parse(open(path, encoding="utf-8").read())
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        names |= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
        names |= {kw.arg for node in ast.walk(tree) if isinstance(node, ast.Call)
                  for kw in node.keywords}
        assert not names & fields, (path, names & fields)


def test_index_archive_takes_its_settings_as_one_object(tmp_path):
    warc = os.path.join(REAL, "webrecorder+warcio__example.warc.gz")
    status = tasks.index_archive(warc, "a.warc.gz", str(tmp_path), Indexing(cdx_format="cdx11"))
    assert status.lines == 2 and not status.skipped and status.stale is None
    again = tasks.index_archive(warc, "a.warc.gz", str(tmp_path), Indexing(cdx_format="cdx11"))
    assert again.skipped and again.lines == 0
