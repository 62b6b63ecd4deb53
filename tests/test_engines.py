"""engines: the one place an engine is chosen, and what each engine is given."""
import os
import shutil

import pytest

from helpers import REAL
from webarchive_indexing.build.tasks import Indexing
from webarchive_indexing.copy import ChunkSettings
from webarchive_indexing.engines import ENGINES, Engine, open_engine
from webarchive_indexing.inputs.discovery import cdx_name, expand
from webarchive_indexing.options import BuildOptions, CopyOptions


def test_every_engine_name_opens_an_engine_that_starts_nothing_until_used():
    for name in ENGINES:
        with open_engine(name, BuildOptions()) as engine:
            assert isinstance(engine, Engine) and engine.name == name
            assert engine.copy([], ChunkSettings("out", "prefix", 1, 0)) == []  # no job
    for name in ("local", "mrjob", "inline"):
        with open_engine(name, CopyOptions()) as engine:
            assert engine.tasks_here
    with open_engine("emr", CopyOptions()) as engine:
        assert not engine.tasks_here
    # the local engine's pool and work directory come when a step first needs them
    with open_engine("local", BuildOptions(workers=3)) as engine:
        assert engine.workers == 3 and engine._pool is None and engine._work is None
    with pytest.raises(ValueError, match="unknown engine 'mapreduce': expected one of local, "
                                         "mrjob, inline"):
        open_engine("mapreduce")


def test_the_mrjob_engine_gives_each_archive_the_name_it_was_given(tmp_path):
    """The index job names archives again from their paths and roots: a directory input,
    an --input-root inside it, and a file outside any root (named by its base name)."""
    sample = os.path.join(REAL, "webrecorder+warcio__example.warc.gz")
    for path in ("crawl/seg/a.warc.gz", "crawl/nested/x/b.warc.gz", "other/c.warc.gz"):
        os.makedirs(tmp_path / os.path.dirname(path), exist_ok=True)
        shutil.copy(sample, tmp_path / path)
    found = expand([str(tmp_path / "crawl"), str(tmp_path / "other" / "c.warc.gz")],
                   [str(tmp_path / "crawl" / "nested")])
    archives = found.archives
    assert not found.missing
    assert sorted(a.name for a in archives) == ["c.warc.gz", "seg/a.warc.gz", "x/b.warc.gz"]
    cdx_dir = str(tmp_path / "cdx")
    with open_engine("inline", BuildOptions()) as engine:
        statuses = engine.index(archives, cdx_dir, Indexing(on_error="skip"))
    by_path = {s.path: s for s in statuses}
    assert sorted(by_path) == sorted(a.path for a in archives)
    for archive in archives:
        assert by_path[archive.path].name == archive.name
        assert by_path[archive.path].cdx == os.path.join(cdx_dir, cdx_name(archive.name))
    assert all(os.path.exists(s.cdx) and not s.errors for s in statuses)
