"""The option objects (``BuildOptions``, ``ExportOptions``, ``CopyOptions``...): what the
library's entry points take instead of long parameter lists; the checks of options that
cannot go together; ``AbsolutePaths``, the MRJob jobs' mixin."""
import os

from .base import UsageError
from .table import (ACCESS_CONTROL, ALLOW_EMPTY_REMOVE, ARCHIVES_PER_TASK, BUILD_BLOCK_DEFLATE,
                    BUILD_INDEXING, BUILD_LINES_PER_BLOCK, BUILD_SHARDS, CDX_BYTES_PER_TASK,
                    CDX_FORMAT, CLUSTER,
                    DEFAULT_LEVELS, FAN_IN, INPUT_ROOT, LEVELS, MRJOB_CONF, ON_ERROR, PARQUET,
                    PROGRESS, REMOVE, ROOT_INDEX, RUNNER, SERVE, SPARK_MASTER, SPLITS_FROM, TABLE,
                    UPDATE, VERBOSE, WORKERS, WORK_DIR, ZSTD_DICTIONARY)
from .outputs import (CDX_PATH, COPY_CLUSTER, COPY_OUTPUT, COPY_WARC_OUTPUT, DICTIONARY,
                      DICT_SIZE, DOMAINS, DOMAINS_FILE, EXPORT_FORMAT, EXPORT_OUTPUT, LEVEL,
                      NAME_PREFIX, OUTPUT_FORMAT, PATH_OPTIONS, PROCESSES,
                      RECOMPRESS_SKIP_EXISTING, RECORDS_CSV, RECORDS_PER_FILE, RETRIES, THREADS,
                      WARC_PREFIX, WACZ_LINES_PER_BLOCK, WACZ_TITLE,
                      WACZ_WARC_PREFIX, WACZ_PAGE_TITLES)


def compression_level(fmt, level):
    """``level`` (``--level``), or the default level of the format ``fmt`` ("zst" or "gz")
    if None; ``UsageError`` if the format has no such level."""
    if level is None:
        return DEFAULT_LEVELS[fmt]
    if level not in LEVELS[fmt]:
        levels = LEVELS[fmt]
        raise UsageError(f"--level {level}: {fmt} levels are {levels[0]} to {levels[-1]}")
    return level


# mrjob's runners whose tasks run on this machine, each in a temporary directory of its own
_LOCAL_RUNNERS = ("local", "inline")


class AbsolutePaths:
    """A mixin of the MRJob jobs: run on mrjob's local or inline runner, whose tasks run
    in temporary directories, the relative paths of ``PATH_OPTIONS`` are made absolute
    (relative to where the job was started) before the tasks get them: else a task would
    write into its temporary directory, which goes when the job ends.

        class IndexWarcsJob(options.AbsolutePaths, MRJob): ...
    """

    def load_args(self, args):
        super().load_args(args)
        task = any(getattr(self.options, name, False) for name in
                   ("run_mapper", "run_combiner", "run_reducer", "run_spark"))
        if task or (self.options.runner or "inline") not in _LOCAL_RUNNERS:
            return
        flags = {flag for option in PATH_OPTIONS for flag in option.flags}
        absolute = list(args)
        for i, arg in enumerate(absolute):
            flag, equals, value = arg.partition("=")
            if flag not in flags:
                continue
            if equals:
                absolute[i] = f"{flag}={_absolute(value)}"
            elif i + 1 < len(absolute):
                absolute[i + 1] = _absolute(absolute[i + 1])
        if absolute != list(args):
            self._cl_args = absolute  # what the tasks are handed (MRJob._non_option_kwargs)
            super().load_args(absolute)


def _absolute(path):
    return path if "://" in path else os.path.abspath(path)


# -- option objects ------------------------------------------------------------------------

class Options:
    """The values of ``OPTIONS`` as attributes named by their destinations, each the
    option's default unless given; ``EXTRA``: settings no command line takes."""
    OPTIONS = ()
    EXTRA = {}

    def __init__(self, **values):
        for option in self.OPTIONS:
            setattr(self, option.dest, values.pop(option.dest) if option.dest in values
                    else option.default)
        for name, default in self.EXTRA.items():
            setattr(self, name, values.pop(name, default))
        if values:
            raise TypeError(f"{type(self).__name__} takes no {', '.join(sorted(values))}")

    @classmethod
    def from_args(cls, args, **values):
        """From parsed arguments (those ``args`` has), and ``values``."""
        given = {option.dest: getattr(args, option.dest) for option in cls.OPTIONS
                 if hasattr(args, option.dest)}
        return cls(**{**given, **values})

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


# What engines read (engines.open_engine): the engine's name is ``runner``; a Spark engine
# runs on ``spark_context`` if one is given (and leaves it running), else on one it makes
ENGINE = (RUNNER, MRJOB_CONF, SPARK_MASTER, VERBOSE, ARCHIVES_PER_TASK, CDX_BYTES_PER_TASK,
          WORKERS, FAN_IN, WORK_DIR)
# The runners that run mrjob's jobs
MRJOB_RUNNERS = ("mrjob", "inline")


def check_engine(settings, strict=False):
    """``UsageError`` for an engine option given with another engine: ``--spark-master``
    without ``--runner spark``; ``--workers``, ``--work-dir`` or a ``--fan-in`` other than
    the default without ``--runner local``; if ``strict``, ``--mrjob-conf`` with an engine
    other than mrjob's too."""
    if settings.spark_master and settings.runner != "spark":
        raise UsageError("--spark-master goes with --runner spark")
    local = {"--workers": settings.workers, "--work-dir": settings.work_dir,
             "--fan-in": settings.fan_in != FAN_IN.default}
    given = [flag for flag, value in local.items() if value]
    if given and settings.runner != "local":
        raise UsageError(f"{' and '.join(given)} go{'es' if len(given) == 1 else ''} with "
                         "--runner local")
    if settings.fan_in < 2:
        raise UsageError("--fan-in must be at least 2: a merge takes two files or more")
    if strict and settings.mrjob_conf and settings.runner not in MRJOB_RUNNERS:
        raise UsageError("--mrjob-conf goes with --runner mrjob or inline")


def check_build(options, inputs):
    """``UsageError`` for build options that cannot go together (before anything runs)."""
    check_engine(options)
    if options.remove and not options.update:
        raise UsageError("--remove goes with --update: it takes lines out of an existing cluster")
    if options.allow_empty_remove and not options.remove:
        raise UsageError("--allow-empty-remove goes with --remove GLOB")
    if options.update:
        if options.runner != "local":
            raise UsageError("--update runs on the local engine: leave out --runner "
                             f"{options.runner} (or give --runner local)")
        given = [flag for flag, value in (("--splits", options.splits),
                                          ("--shards", options.shards),
                                          ("--lines-per-block", options.lines_per_block))
                 if value]
        if given:
            raise UsageError(f"--update keeps the split points and lines per block of the "
                             f"cluster in OUTDIR: leave out {', '.join(given)} (or build anew)")
        if options.parquet:
            raise UsageError("--parquet goes without --update: an update writes no table "
                             "(build anew to write one)")
    if not inputs and not (options.update and options.remove):
        raise UsageError("no INPUT given: name the archives or indexes to build from "
                         "(only --update --remove GLOB goes without)")


def check_table(settings, writes_table, needs):
    """``UsageError`` for a table option (``TABLE``) set where no table is written; ``needs``
    names what writes one (``--parquet DIR``)."""
    if writes_table:
        return
    given = [option.name for option in TABLE if getattr(settings, option.dest) != option.default]
    if given:
        raise UsageError(f"{' and '.join(given)} {'goes' if len(given) == 1 else 'go'} with "
                         f"{needs}, which writes a table")


def check_indexing(cdx_fields, cdx_format, post_append=False):
    """``UsageError`` for indexing options that cannot go together."""
    if cdx_fields != "pywb" and cdx_format != "cdxj":
        raise UsageError(f"--cdx-fields {cdx_fields} needs --cdx-format cdxj, not {cdx_format} "
                         "(CDX11 and CDX9 have no columns for charset and languages)")
    if post_append and cdx_fields != "pywb":
        raise UsageError(f"--post-append goes with --cdx-fields pywb, not {cdx_fields} (Common "
                         "Crawl's index has no POST keys): leave one of them out")


class BuildOptions(Options):
    """What ``build.build(inputs, out_dir, options)`` does, and with which engine."""
    OPTIONS = (BUILD_SHARDS, BUILD_LINES_PER_BLOCK, BUILD_BLOCK_DEFLATE, SPLITS_FROM, UPDATE, REMOVE,
               ALLOW_EMPTY_REMOVE, ON_ERROR,
               ROOT_INDEX, PROGRESS, PARQUET, *TABLE, *BUILD_INDEXING, *ENGINE)
    EXTRA = {"spark_context": None}


class ZstdDictOptions(Options):
    """What ``zstd_dict.train(inputs, output, options)`` samples and trains."""
    OPTIONS = (DICT_SIZE, ZSTD_DICTIONARY, PROCESSES, PROGRESS)


class RecompressOptions(Options):
    """How ``recompress.recompress(inputs, output, options)`` recompresses and indexes."""
    OPTIONS = (OUTPUT_FORMAT, DICTIONARY, LEVEL, CDX_PATH, CDX_FORMAT, ZSTD_DICTIONARY,
               INPUT_ROOT, RECOMPRESS_SKIP_EXISTING, PROCESSES, PROGRESS)


class WaczOptions(Options):
    """What ``wacz.pack(inputs, output, options)`` packs, and with which engine it indexes."""
    OPTIONS = (WACZ_LINES_PER_BLOCK, WACZ_TITLE, WACZ_WARC_PREFIX, WACZ_PAGE_TITLES, INPUT_ROOT,
               ON_ERROR, PROGRESS, *ENGINE)


class ExportOptions(Options):
    """What ``export.export(options)`` writes: which cluster, where to, in which format."""
    OPTIONS = (CLUSTER, EXPORT_OUTPUT, EXPORT_FORMAT, *TABLE, PROGRESS, *ACCESS_CONTROL)


class CopyOptions(Options):
    """What ``webarchive-index copy copy`` copies, where to, and with which engine."""
    OPTIONS = (COPY_CLUSTER, DOMAINS, DOMAINS_FILE, RECORDS_CSV, COPY_OUTPUT, RECORDS_PER_FILE,
               NAME_PREFIX, *COPY_WARC_OUTPUT, WARC_PREFIX, ZSTD_DICTIONARY, THREADS, RETRIES,
               PROGRESS, *ENGINE, *ACCESS_CONTROL)
    EXTRA = {"spark_context": None}


class ServeOptions(Options):
    """What ``serve.serve(options)`` serves, where, and within which bounds."""
    OPTIONS = SERVE
