"""Every option of the command line, the jobs and the Spark entry script, declared once.

An option is its flags and what argparse's ``add_argument`` takes for it; ``add``
registers options on an argparse parser, or on an MRJob job in ``configure_args``
(``add_passthru_arg`` takes argparse's signature). A boolean option comes with its
``--no-`` twin. Where one command words the help of a shared option its own way,
``option.but(help=...)`` is that option with another help.

    add(parser, SHARDS, LINES_PER_BLOCK, PROGRESS)      # a command's parser
    add(self, SHARDS.but(required=True, help=...))      # in an MRJob's configure_args
    options = BuildOptions.from_args(parser.parse_args())
    build(inputs, out_dir, BuildOptions(shards=4, runner="inline"))

The option objects (``BuildOptions``, ``ExportOptions``, ``CopyOptions``) are what the library's entry
points take instead of long parameter lists: an attribute per option, named as its
destination, its default unless given.

An option of ``query`` that mirrors a parameter of the CDX API names it (``param``):
``request.CdxRequest`` is the option object of both, made from ``query``'s arguments or
from the query string of a request to ``serve``.
"""
import argparse
import os
import re

from .cdx.cdxline import CDX_FIELDS as CDX_FIELD_SETS, FORMATS

# Defaults that other modules use too
DEFAULT_THREADS = 16
DEFAULT_RETRIES = 5
DEFAULT_RECORDS_PER_FILE = 10000
DEFAULT_NAME_PREFIX = "extract"
# CDX files read by one sampling or cluster task on Spark, in (compressed) bytes: as the
# jobs' mapreduce.input.fileinputformat.split.maxsize
DEFAULT_CDX_BYTES_PER_TASK = 50_000_000
# A zstd dictionary's size (zstd-dict); the format asks readers for 8 MiB at most
DEFAULT_DICT_SIZE = 1 << 20
# Compression levels of the formats WARC files are written in, and their defaults
LEVELS = {"zst": range(1, 23), "gz": range(1, 10)}
DEFAULT_LEVELS = {"zst": 3, "gz": 6}
ERROR_MODES = ("fail", "skip")
# As zipnum.LINES_PER_BLOCK and query.MATCH_TYPES (the command line starts without
# importing those modules; a test checks that they agree)
LINES_PER_BLOCK_DEFAULT = 3000
# As mergebuild.FAN_IN
FAN_IN_DEFAULT = 256
MATCH_TYPES = ("exact", "prefix", "host", "domain")
# cdxj: the lines as stored (CDX lines made CDXJ); json: one object a line; cdx11: classic
# CDX; text: as stored, or fl's fields space-separated; link: a Memento TimeMap
QUERY_OUTPUTS = ("cdxj", "json", "cdx11", "text", "link")
# What serve allows a request by default
DEFAULT_MAX_LIMIT = 1_000_000
DEFAULT_TIMEOUT = 120
# and how it follows rebuilds and bounds its clients (serve.Bounds)
DEFAULT_RELOAD_SECONDS = 5
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_HEADER_TIMEOUT = 10
DEFAULT_IDLE_TIMEOUT = 30
# The columnar table's (columnar.py). Rows per row group: ~5-10 MB of Common Crawl's rows
# compressed, a unit a remote reader (Athena, DuckDB over HTTP) fetches in one request, and
# fine enough that a one-host query reads a few row groups of a file, not the file (Spark
# writes 128 MB ones by default). zstd: smaller and faster than gzip (Common Crawl's
# choice); DuckDB, Spark, Athena, pyarrow and Polars read each of these.
ROW_GROUP_ROWS_DEFAULT = 100_000
PARQUET_COMPRESSIONS = ("zstd", "gzip", "snappy")
# As export.FORMATS (the formats ``export`` writes)
EXPORT_FORMATS = ("cdx", "parquet")


class UsageError(ValueError):
    """Options that cannot work, found before anything runs."""


# -- validators ----------------------------------------------------------------------------

# int() also takes other scripts' digits ('٣' is 3), '+3', ' 3 ' and '1_000'
WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def whole_number(text):
    """``text`` as an int if it is ASCII digits after an optional '-', else None."""
    return int(text) if WHOLE_NUMBER.fullmatch(text) else None


def dash_is_stdout(text):
    """An output path for argparse's ``type``: None (print) for ``-``, as it means to a
    shell user, not a file named so."""
    return None if text == "-" else text


def positive(text):
    """A whole number of at least 1, for argparse's ``type``."""
    value = whole_number(text) or 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def compression_level(fmt, level):
    """``level`` (``--level``), or the default level of the format ``fmt`` ("zst" or "gz")
    if None; ``UsageError`` if the format has no such level."""
    if level is None:
        return DEFAULT_LEVELS[fmt]
    if level not in LEVELS[fmt]:
        levels = LEVELS[fmt]
        raise UsageError(f"--level {level}: {fmt} levels are {levels[0]} to {levels[-1]}")
    return level


# More shards than this are a mistake: a shard file and a reducer each, a sample of 100
# lines each in one reducer's memory; Common Crawl's 3 billion captures use 300
MAX_SHARDS = 10000


def shard_count(text):
    """A number of shards, from 1 to ``MAX_SHARDS``, for argparse's ``type``."""
    value = positive(text)
    if value > MAX_SHARDS:
        raise argparse.ArgumentTypeError(
            f"expected at most {MAX_SHARDS} shards, got {text!r} (Common Crawl's 3 billion "
            "captures a month use 300)")
    return value


def nonzero(text):
    """A whole number other than 0, for argparse's ``type``."""
    value = whole_number(text) or 0
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a whole number other than 0, got {text!r}")
    return value


def seconds(text):
    """A number of seconds above 0 (``0.5`` too), for argparse's ``type``."""
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def non_negative(text):
    """A whole number of at least 0, for argparse's ``type``."""
    if whole_number(text) is None or text.startswith("-"):
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0, got {text!r}")
    return int(text)


# A name for files that stays a name: no "/", "..", or hidden file
FILE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
FILE_NAME_HELP = "a file name of letters, digits, '.', '_' and '-' (not starting with '.')"


def file_name(text):
    """A name for files (``FILE_NAME``), for argparse's ``type``."""
    if not FILE_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected {FILE_NAME_HELP}, got {text!r}")
    return text


# -- options, and how they are registered -------------------------------------------------

class Option:
    """One option: its flags (or a positional argument's name) and ``add_argument``'s
    keywords; ``param``: the name (or names, the first the main one) of the CDX API
    parameter it mirrors, if any."""

    def __init__(self, *flags, param=None, **kwargs):
        self.flags, self.kwargs = flags, kwargs
        self.params = (param,) if isinstance(param, str) else tuple(param or ())

    @property
    def dest(self):
        if "dest" in self.kwargs:
            return self.kwargs["dest"]
        name = next((flag for flag in self.flags if flag.startswith("--")), self.flags[0])
        return name.lstrip("-").replace("-", "_")

    @property
    def default(self):
        default = self.kwargs.get("default")
        return list(default) if isinstance(default, list) else default

    @property
    def name(self):
        """How a message names it: its first long flag, or a positional argument's metavar."""
        flag = next((flag for flag in self.flags if flag.startswith("--")), None)
        return flag or self.kwargs.get("metavar") or self.flags[0]

    def but(self, **changes):
        """This option with some of its keywords changed."""
        return Option(*self.flags, param=self.params, **{**self.kwargs, **changes})

    def add_to(self, target):
        _register(target)(*self.flags, **self.kwargs)


class Flag(Option):
    """A boolean option ``--NAME`` and its twin ``--no-NAME``."""

    def __init__(self, name, default, help, off_help, short=None, dest=None, param=None):
        flags = (short, f"--{name}") if short else (f"--{name}",)
        super().__init__(*flags, param=param, dest=dest or name.replace("-", "_"),
                         default=default, help=help)
        self.flag_name, self.off_help, self.short = name, off_help, short

    def but(self, **changes):
        values = {"default": self.kwargs["default"], "help": self.kwargs["help"],
                  "off_help": self.off_help, "short": self.short, "dest": self.dest,
                  "param": self.params, **changes}
        return Flag(self.flag_name, **values)

    def add_to(self, target):
        register = _register(target)
        register(*self.flags, dest=self.dest, action="store_true",
                 default=self.kwargs["default"], help=self.kwargs["help"])
        register(f"--no-{self.flag_name}", dest=self.dest, action="store_false",
                 help=self.off_help)


class FileOption(Option):
    """An MRJob option naming a file that the job ships to its tasks (``add_file_arg``)."""

    def but(self, **changes):
        return FileOption(*self.flags, param=self.params, **{**self.kwargs, **changes})

    def add_to(self, target):
        target.add_file_arg(*self.flags, **self.kwargs)


def _register(target):
    """How ``target`` takes an option: an MRJob's ``add_passthru_arg`` (handed on to its
    tasks), else argparse's ``add_argument``."""
    return getattr(target, "add_passthru_arg", None) or target.add_argument


def add(target, *options):
    """Register ``options`` on ``target``: an argparse parser, or an MRJob job."""
    for option in options:
        option.add_to(target)


# -- the table -----------------------------------------------------------------------------

INPUT_HELP = ("WARC/ARC files (.warc.gz .warc.zst .warc .arc.gz .arc), WACZ files (.wacz: "
              "their archive/ WARC files indexed in place), directories (searched "
              "recursively), glob patterns, or manifest files listing one archive path per "
              "line; files, manifests and directories may be s3://bucket/key URLs "
              "(s3://bucket/prefix/ is listed like a directory)")

BUILD_INPUT_HELP = (
    "WARC/ARC files (.warc.gz .warc.zst .warc .arc.gz .arc), WACZ files (.wacz: their archive/ "
    "WARC files indexed in place), and existing indexes whose lines go into "
    "the cluster with the archives': flat CDXJ, CDX11 or CDX9 files (.cdx .cdxj .cdx.gz "
    ".cdxj.gz, Common Crawl's cdx-NNNNN.gz; sorted or not), ZipNum clusters (a cluster.idx, "
    "or a directory holding one, e.g. a build's output directory) and the 2012 Common Crawl "
    "URL index (url-index.*); as files, directories (searched recursively), glob patterns or "
    "manifest files listing one path per line; files, manifests and directories may be "
    "s3://bucket/key URLs (s3://bucket/prefix/ is listed like a directory)")

# what to index, and how
INPUTS = Option("inputs", nargs="+", metavar="INPUT", help=INPUT_HELP)
BUILD_INPUTS = INPUTS.but(help=BUILD_INPUT_HELP)
CDX_FORMAT = Option("--cdx-format", choices=FORMATS, default="cdxj",
                    help="CDXJ (default, as Common Crawl and pywb write it), or classic CDX11 or "
                         "CDX9 (CDX9 has no record length: copy cannot read records through it)")
BUILD_CDX_FORMAT = CDX_FORMAT.but(
    default=None, help="the CDX format of the cluster: CDXJ (as Common Crawl and pywb write it) "
                       "or classic CDX11 or CDX9 (default: the format of the index inputs, else "
                       "cdxj); archives are indexed in it, and index inputs of another format "
                       "converted to it (CDX9 has no record length: copy cannot read records "
                       "through it, and it converts to nothing else)")
LEGACY_PREFIX = Option("--legacy-prefix", default="", metavar="KEY",
                       help="read only the URL keys starting with KEY of 2012 Common Crawl URL "
                            "index inputs (their keys are reversed host names: "
                            "com.example.www/path:http; com.example takes example.com and its "
                            "subdomains); default: every key")
REKEY = Flag("rekey", False,
             "make the URL keys of index inputs SURT keys, from each line's original URL "
             "(from its key where that is a URL without scheme, as Wayback's non-SURT keys "
             "are): for indexes keyed otherwise, which are refused without it",
             "keep the URL keys of index inputs as they are (default)")
INPUT_ROOT = Option("--input-root", action="append", default=[], metavar="DIR",
                    help="make the CDX 'filename' of archives under DIR relative to it "
                         "(directory inputs and manifests are roots already); repeatable")
SKIP_EXISTING = Flag("skip-existing", True,
                     "keep CDX files from an earlier run and index only new archives (default)",
                     "index every archive again")
ON_ERROR = Option("--on-error", choices=ERROR_MODES, default="fail",
                  help="fail (default): any unreadable input stops the build before a cluster "
                       "is written; skip: index every readable record and report the rest")
CDX_FIELDS = Option(
    "--cdx-fields", choices=tuple(CDX_FIELD_SETS), default="pywb",
    help="pywb (default): the lines pywb's indexer writes, byte for byte; cc: also Common "
         "Crawl's fields where the WARC has them: charset and languages (from the metadata "
         "record after a response), truncated (WARC-Truncated) and redirect (a 3xx's "
         "Location, made absolute); CDXJ only")
POST_APPEND = Flag(
    "post-append", False,
    "key each capture of a request other than GET by its method and, for POST and PUT, its "
    "body (a form, multipart, JSON flattened, else base64), with method and requestBody "
    "fields, as pywb's cdx-indexer -p and wb-manager's collections key them: pywb's replay "
    "then finds the capture of each request body (CDX11 and CDX9: the key alone)",
    "key captures by their URL alone, as pywb's cdx-indexer and cdxj-indexer do without -p "
    "(default)")
ZSTD_DICTIONARY = Option("--zstd-dictionary", metavar="FILE",
                         help="the zstd dictionary of .warc.zst inputs that do not hold their "
                              "own (a dictionary frame at the start of a file is used where "
                              "there is one); local, s3:// or http(s)://")
INDEXING = (CDX_FORMAT, CDX_FIELDS, POST_APPEND, INPUT_ROOT, SKIP_EXISTING, ZSTD_DICTIONARY)
# what build takes of them, with index inputs (an update keeps the cluster's POST keys)
BUILD_INDEXING = (BUILD_CDX_FORMAT, CDX_FIELDS,
                  POST_APPEND.but(default=None, off_help=POST_APPEND.off_help[:-len("(default)")]
                                  + "(default; an update: as the cluster was built)"),
                  INPUT_ROOT, SKIP_EXISTING, LEGACY_PREFIX, REKEY, ZSTD_DICTIONARY)

# What a build writes (build --help, the README)
BUILD_OUTPUT = """\
OUTDIR/archives.txt            the archives indexed
OUTDIR/cdx/<name>.cdx.gz       one sorted CDX per archive (a/b/x.warc.gz -> cdx/a/b/x.cdx.gz,
                               a/b/x.warc.zst -> cdx/a/b/x.warc.zst.cdx.gz, a/b/x.arc.gz ->
                               cdx/a/b/x.arc.gz.cdx.gz), and beside it <name>.cdx.gz.meta.json
                               (what it was made from) and <name>.cdx.gz.errors.json if it
                               had problems
OUTDIR/rewritten-indexes/      index inputs rewritten for the jobs (clusters, legacy indexes,
                               files of several gzip members, with malformed lines, converted
                               or re-keyed), if any
OUTDIR/splits.txt, splits.seq  the shards-1 split points, as text and as a Hadoop SequenceFile
OUTDIR/partitions.seq          the shard boundaries, for Hadoop's TotalOrderPartitioner
OUTDIR/cluster/                cluster.idx, cluster.loc, cluster.root, and build-NNNNN/ with the
                               shards cdx-NNNNN.gz, their indexes part-NNNNN and contents.json
                               (what the cluster holds, for --update)
OUTDIR/errors.json             every problem met, when there were any
DIR/crawl=NAME/subset=SUBSET/  with --parquet DIR: the columnar table of the cluster's lines,
                               part-NNNNN.parquet per shard and partition (docs/columnar.md)
"""

# the cluster
OUTDIR = Option("-o", "--output", required=True, metavar="OUTDIR",
                help="output directory, or s3://bucket/prefix")
SHARDS = Option("--shards", type=shard_count, default=1,
                help=f"shards in the cluster (default 1, at most {MAX_SHARDS}; Common Crawl uses "
                     "300)")
# build's: None until known (--splits and --update bring their own)
BUILD_SHARDS = SHARDS.but(default=None, help=f"shards in the cluster (default 1, or as many as "
                                             f"--splits makes; at most {MAX_SHARDS}; Common "
                                             "Crawl uses 300)")
LINES_PER_BLOCK = Option(
    "--lines-per-block", type=positive, default=LINES_PER_BLOCK_DEFAULT,
    help=f"CDX lines per gzip block (default {LINES_PER_BLOCK_DEFAULT}, as Common Crawl and the "
         "Internet Archive)")
BUILD_LINES_PER_BLOCK = LINES_PER_BLOCK.but(default=None)
SPLITS_FROM = Option(
    "--splits", metavar="FILE",
    help="take the split points from FILE instead of sampling: a splits.txt or splits.seq "
         "(of an earlier build, or of the original jobs), or an existing cluster (its "
         "directory or cluster.idx: points taken evenly from its blocks' keys); --shards "
         "defaults to as many as FILE makes")
UPDATE = Flag("update", False,
              "merge the new INPUTs into the cluster already in OUTDIR, with its split points "
              "and lines per block, and publish the result in its place (archives it holds "
              "already are not added again; those changed since are indexed again and "
              "replace their lines); --runner local only",
              "build the cluster anew from the INPUTs (default)")
REMOVE = Option("--remove", action="append", default=[], metavar="GLOB",
                help="with --update: leave out every line whose filename matches GLOB (shell "
                     "pattern, * matches / too; quote it), and the CDX files of the archives "
                     "it names; repeatable; INPUT may then be left out")
ALLOW_EMPTY_REMOVE = Flag("allow-empty-remove", False,
                          "with --remove: go on when a GLOB matches no archive and no line of the "
                          "cluster (default: that is an error, as a mistyped takedown would be)",
                          "a --remove GLOB that removes nothing is an error (default)")
ROOT_INDEX = Flag("root-index", True,
                  "also write cluster.root, a small index of cluster.idx with which a remote "
                  "lookup needs at most 3 requests (default; pywb and others ignore it)",
                  "write no cluster.root: remote lookups binary-search cluster.idx with more "
                  "requests")

# the columnar table (build --parquet, export --format parquet)
PARQUET = Option("--parquet", metavar="DIR",
                 help="also write the cluster's lines as a Parquet table in Common Crawl's "
                      "columnar schema into DIR (crawl=NAME/subset=SUBSET/part-NNNNN.parquet, "
                      "one file per shard and partition), from the same sorted lines, in the "
                      "same run: a local directory (replaced once the new table is complete) "
                      "or an empty s3://bucket/prefix")
CRAWL = Option("--crawl", metavar="NAME",
               help="the crawl partition of rows from archives other than Common Crawl's "
                    "(theirs, with segment and subset, comes from the WARC path) (default: the "
                    "name of the build's output directory, or of the exported cluster's)")
ROW_GROUP_ROWS = Option("--row-group-rows", type=positive, default=ROW_GROUP_ROWS_DEFAULT,
                        metavar="N",
                        help=f"rows per Parquet row group (default {ROW_GROUP_ROWS_DEFAULT}: a "
                             "few MB, fine enough for a one-host query to skip most of a file)")
PARQUET_COMPRESSION = Option("--parquet-compression", choices=PARQUET_COMPRESSIONS,
                             default=PARQUET_COMPRESSIONS[0],
                             help="compression of the Parquet files (default zstd; Common "
                                  "Crawl's use gzip)")
TABLE = (CRAWL, ROW_GROUP_ROWS, PARQUET_COMPRESSION)

# how the work runs
RUNNER = Option("--runner", choices=("local", "mrjob", "inline", "spark"), default="local",
                help="local (default): this machine's cores, merging the sorted CDX files "
                     "(the fastest here); mrjob: the MRJob jobs on mrjob's local runner, as "
                     "they run on Hadoop; inline: the same jobs in one process, for debugging; "
                     "spark: Spark jobs (pyspark). All give the same bytes")
WORKERS = Option("--workers", type=positive, metavar="N",
                 help="with --runner local: worker processes (default: the cores this process "
                      "may use)")
FAN_IN = Option("--fan-in", type=positive, default=FAN_IN_DEFAULT, metavar="N",
                help="with --runner local: files one task merges at once, at least 2 (default "
                     f"{FAN_IN_DEFAULT}); more inputs are merged in rounds. Open files stay "
                     "under about N per worker, and fewer where the limit of open files "
                     "(ulimit -n) is lower")
WORK_DIR = Option("--work-dir", metavar="DIR",
                  help="with --runner local: where the sorted runs go while a build runs, "
                       "about the size of the CDX lines uncompressed (default: TMPDIR)")
SPARK_MASTER = Option("--spark-master", metavar="URL",
                      help="with --runner spark: the Spark master (default local[*])")
MRJOB_CONF = Option("--mrjob-conf", metavar="PATH", help="mrjob.conf to use (default: none)")
ARCHIVES_PER_TASK = Option("--archives-per-task", type=positive, default=1,
                           help="archives indexed by one Spark task (default 1)")
CDX_BYTES_PER_TASK = Option(
    "--cdx-bytes-per-task", type=positive, default=DEFAULT_CDX_BYTES_PER_TASK,
    help="per-archive CDX files read by one sampling/cluster map task, in (compressed) bytes "
         f"(default {DEFAULT_CDX_BYTES_PER_TASK})")
VERBOSE = Flag("verbose", False, "show what mrjob does (runner, steps, counters)",
               "only progress and the summary (default)", short="-v")
PROGRESS = Flag("progress", None, "show progress (default: when stderr is a terminal)",
                "never show progress")

# query, and the CDX API's parameters that query's options mirror (serve's)
CLUSTER = Option("location", metavar="CLUSTER",
                 help="a build's output directory, its cluster/ directory or cluster.idx: "
                      "a local path, s3://bucket/prefix or http(s)://host/path")
URL = Option("url", metavar="URL", param="url",
             help="a URL (example.com/path), or a pattern: example.com/path* (prefix), "
                  "*.example.com (domain)")
MATCH_TYPE = Option("--match-type", choices=MATCH_TYPES, param="matchType",
                    help="how URL matches, unless it has a wildcard (default exact)")
FROM = Option("--from", dest="from_ts", metavar="TS", param=("from", "from_ts"),
              help="captures at or after timestamp TS (1-14 digits: 2024, 20240131...)")
TO = Option("--to", dest="to_ts", metavar="TS", param="to",
            help="captures at or before timestamp TS (2023 means up to 20231231235959)")
FILTER = Option("--filter", dest="filters", action="append", default=[],
                metavar="[!][=|~]FIELD:VALUE", param="filter",
                help="keep captures whose FIELD (url, mime, status, digest, filename...) "
                     "contains VALUE, equals it (=) or matches the regex (~); repeatable")
LIMIT = Option("--limit", type=nonzero, metavar="N", param="limit",
               help="print at most N lines; -N: the last N (-1: the newest)")
QUERY_OUTPUT = Option("--output", choices=QUERY_OUTPUTS, default="cdxj", param="output",
                      help="cdxj (default; the lines as stored in a CDXJ cluster), json (one "
                           "object per line), cdx11 (classic 11-field CDX), text (as stored, "
                           "or the --fl fields space-separated) or link (a Memento TimeMap)")
FIELDS = Option("--fl", "--fields", dest="fields", metavar="FIELD,...", param=("fl", "fields"),
                help="only these fields, in this order (e.g. timestamp,url,status)")
SORT = Option("--sort", choices=("reverse", "closest"), param="sort",
              help="reverse: last first; closest: nearest to --closest first")
CLOSEST = Option("--closest", metavar="TS", param="closest",
                 help="with --sort closest (implied): the timestamp to be near")
COLLAPSE = Option("--collapse", metavar="FIELD[:N]", param="collapse",
                  help="drop a line whose FIELD (or its first N characters) equals the "
                       "previous line's: digest, timestamp:8 (one a day), urlkey")
PAGE = Option("--page", type=non_negative, metavar="N", param="page",
              help="only page N (from 0) of the result, in pages of --page-size blocks of "
                   "cluster.idx, as pywb's page= (without: every page)")
PAGE_SIZE = Option("--page-size", type=positive, metavar="BLOCKS", param="pageSize",
                   help="blocks per page with --page, --show-num-pages or --show-paged-index "
                        "(default 10, as pywb)")
SHOW_NUM_PAGES = Flag("show-num-pages", False,
                      "print only the page count as pywb's showNumPages does: "
                      '{"pages": ..., "pageSize": ..., "blocks": ...}', "print the lines (default)",
                      param="showNumPages")
SHOW_PAGED_INDEX = Flag("show-paged-index", False,
                        "print the cluster.idx lines of the result's blocks (of --page N, else "
                        "all)", "print the lines (default)", param="showPagedIndex")
COUNT = Flag("count", False,
             'print only the exact number of matching captures: {"captures": N} (without '
             "filters it reads only the blocks at the ends of the range)",
             "print the lines (default)", dest="show_num_captures", param="showNumCaptures")
SHOW_RESUME_KEY = Flag("show-resume-key", False,
                       "after --limit lines, if there are more: a blank line and a key (json: a "
                       '{"resumeKey": ...} line) from which --resume-key goes on',
                       "no resume key (default)", param="showResumeKey")
RESUME_KEY = Option("--resume-key", metavar="KEY", param="resumeKey",
                    help="go on after the line a --show-resume-key answer ended with")
METHOD = Option("--method", metavar="METHOD", param="method",
                help="the captures of a request by METHOD (POST, PUT...; GET: the URL's own) "
                     "with --request-body, in a cluster built with --post-append: the key "
                     "URL?__wb_method=METHOD&BODY, as pywb and OutbackCDX look one up; an "
                     "exact URL")
REQUEST_BODY = Option("--request-body", metavar="QUERY", param="requestBody",
                      help="with --method: the request's body as a query, as the requestBody "
                           "field holds it (a=1&b=2; JSON flattened; __wb_post_data=BASE64)")
# What a CDX API request holds (cdxapi.CdxRequest): query's options and serve's parameters
CDX_API = (URL, MATCH_TYPE, FROM, TO, FILTER, LIMIT, QUERY_OUTPUT, FIELDS, SORT, CLOSEST,
           COLLAPSE, PAGE, PAGE_SIZE, SHOW_NUM_PAGES, SHOW_PAGED_INDEX, COUNT, SHOW_RESUME_KEY,
           RESUME_KEY, METHOD, REQUEST_BODY)

# access control (api/access.py, docs/access-control.md): rules in files beside or apart
# from the cluster, applied wherever captures leave the tool
ACCESS_DEFAULTS = ("allow", "block", "exclude")
ACL = Option("--acl", action="append", default=[], metavar="FILE",
             help="access rules: a pywb .aclj file (or a directory of them; local, s3:// or "
                  "http(s)://), its rules merged with those of other --acl files; excluded "
                  "captures are left out, blocked ones marked \"access\": \"block\" "
                  "(repeatable)")
ACL_USER = Option("--acl-user", metavar="NAME",
                  help="the user (pywb's X-Pywb-ACL-User) or access point (OutbackCDX's) whose "
                       "rules hold, beside those for everyone (default: none)")
ACL_DEFAULT = Option("--acl-default", choices=ACCESS_DEFAULTS, default="allow",
                     help="the access of a capture no rule matches (default allow)")
EMBARGO = Option("--embargo", action="append", default=[], metavar="WHEN",
                 help="embargo captures before:TIMESTAMP, after:TIMESTAMP, newer:PERIOD (younger "
                      "than PERIOD: 10y, 6m, 1y6m, 2w, 30d) or older:PERIOD, as pywb's embargo "
                      "setting; repeatable (any of them embargoes); a rule allow_ignore_embargo "
                      "lifts it")
EMBARGO_ACCESS = Option("--embargo-access", choices=("exclude", "block"), default="exclude",
                        help="what an embargo does: exclude (default, as pywb) or block")
ACCESS_CONTROL = (ACL, ACL_USER, ACL_DEFAULT, EMBARGO, EMBARGO_ACCESS)
# webarchive-index acl (commands/acl.py)
ACL_FILE = Option("file", metavar="FILE",
                  help="the rule file (pywb's .aclj; local or s3://); each change is logged in "
                       "FILE.log")
ACL_URL = Option("url", metavar="URL",
                 help="a URL (http://example.com/page), a URL prefix (example.com/path*, or a "
                      "URL: a rule holds for everything below it, as pywb's), *.example.com "
                      "(the host and its subdomains), or a SURT prefix (com,example)/path)")
ACL_ACCESS = Option("access", choices=("allow", "block", "exclude", "allow_ignore_embargo"),
                    help="allow; block (shown, marked, replayed as 451 by pywb); exclude (as if "
                         "absent); allow_ignore_embargo (allowed despite an embargo)")
EXACT_MATCH = Flag("exact-match", False, "the exact URL only (pywb's KEY### rule)",
                   "URL and everything below it (default)", short="-e")
RULE_USER = Option("-u", "--user", metavar="NAME",
                   help="the rule holds for this user or access point only (default: everyone)")
WHO = Option("--who", metavar="NAME", help="who makes the change, for the log (default: $USER)")
WHY = Option("--why", metavar="TEXT", help="why, for the log (a ticket, a takedown request)")
RULE_FIELDS = (
    Option("--message", dest="publicMessage", metavar="TEXT",
           help="a public message, said with what the rule blocks (OutbackCDX's publicMessage)"),
    Option("--comment", dest="privateComment", metavar="TEXT",
           help="a private comment, never shown (OutbackCDX's privateComment)"),
    Option("--reason", metavar="TEXT", help="a category of reason (OutbackCDX's reason)"),
    Option("--captured", metavar="START,END",
           help="the rule holds for captures in this range only (timestamps or ISO 8601; "
                "either may be empty): OutbackCDX's captured"),
    Option("--accessed", metavar="START,END",
           help="the rule holds while now is in this range (a takedown under review): "
                "OutbackCDX's accessed"),
    Option("--period", metavar="PERIOD",
           help="the rule holds for PERIOD after capture (10y, 6m, 30d): OutbackCDX's embargo "
                "period"),
)
FIX = Flag("fix", False, "sort a file out of order (atomically, logged)", "only report (default)")
MATCH_TIMESTAMP = Option("--timestamp", metavar="TS",
                         help="the capture's timestamp (default: now)")
IMPORT_SOURCE = Option("source", metavar="LIST",
                       help="OpenWayback's exclusions.txt, or a list of URLs, URL prefixes or "
                            "SURT prefixes, one a line ('#' starts a comment)")
CHECK_URLS = Option("urls", metavar="URLS",
                    help="a file of URL [TIMESTAMP] lines (- : stdin); prints one JSON line "
                         "each, as serve's /NAME/ap/AP/check answers")
SERVE_ACCESS_CONTROL = (
    ACL.but(metavar="NAME=FILE[,FILE...]",
            help="the access rules of collection NAME: pywb .aclj files or directories of them "
                 "(read again when they change; one that cannot be read makes NAME answer 503, "
                 "never without its rules); repeatable"),
    EMBARGO.but(metavar="NAME=WHEN",
                help="an embargo of collection NAME: before:TIMESTAMP, after:TIMESTAMP, "
                     "newer:PERIOD (10y, 6m, 30d) or older:PERIOD, as pywb's; repeatable"),
    ACL_DEFAULT.but(help="the access of a capture no rule matches, in every collection "
                         "(default allow)"),
    EMBARGO_ACCESS)

# serve
COLLECTIONS = Option("collections", nargs="+", metavar="NAME=CLUSTER[,CLUSTER...]",
                     help="a collection and its cluster(s) (as query takes them: local, s3:// "
                          "or http(s)://); several clusters are merged in key order")
HOST = Option("--host", default="127.0.0.1",
              help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 for "
                   "every interface)")
PORT = Option("--port", type=non_negative, default=8080,
              help="port (default 8080; 0: any free one)")
SERVE_WORKERS = Option("--workers", type=positive, help="processes answering (default: one per core)")
CACHE_MB = Option("--cache-mb", type=positive, default=64,
                  help="MiB of inflated blocks each worker keeps for later lookups (default 64)")
TIMEOUT = Option("--timeout", type=positive, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                 help=f"longest a request may take (default {DEFAULT_TIMEOUT})")
MAX_LIMIT = Option("--max-limit", type=positive, default=DEFAULT_MAX_LIMIT, metavar="N",
                   help="largest limit (or -limit) a request may ask (default "
                        f"{DEFAULT_MAX_LIMIT})")
RELOAD_SECONDS = Option("--reload-seconds", type=non_negative, default=DEFAULT_RELOAD_SECONDS,
                        metavar="SECONDS",
                        help="how often a worker asks whether a remote cluster was rebuilt (a "
                             f"request for its cluster.idx; default {DEFAULT_RELOAD_SECONDS}; 0: "
                             "at every request); a local one is looked at (a stat) at every request")
MAX_CONNECTIONS = Option("--max-connections", type=positive, default=DEFAULT_MAX_CONNECTIONS,
                         metavar="N",
                         help="connections a worker holds (default "
                              f"{DEFAULT_MAX_CONNECTIONS}, within ulimit -n); one more closes "
                              "the one that has waited longest for a request, or gets 503 if "
                              "all are answering")
HEADER_TIMEOUT = Option("--header-timeout", type=seconds, default=DEFAULT_HEADER_TIMEOUT,
                        metavar="SECONDS",
                        help="longest a client may take to send a request's line and headers "
                             f"(the first from its connection; default {DEFAULT_HEADER_TIMEOUT})")
IDLE_TIMEOUT = Option("--idle-timeout", type=seconds, default=DEFAULT_IDLE_TIMEOUT, metavar="SECONDS",
                      help="longest a connection waits for the client's next request, or for it "
                           f"to take more of an answer (default {DEFAULT_IDLE_TIMEOUT})")
ACCESS_LOG = Option("--access-log", metavar="PATH",
                    help="append the access log to PATH (default: stderr)")
LOG = Flag("log", True, "write an access log (default)", "write no access log")
SERVE = (COLLECTIONS, HOST, PORT, SERVE_WORKERS, CACHE_MB, TIMEOUT, MAX_LIMIT, RELOAD_SECONDS,
         MAX_CONNECTIONS, HEADER_TIMEOUT, IDLE_TIMEOUT, ACCESS_LOG, LOG, *SERVE_ACCESS_CONTROL)

# export
EXPORT_OUTPUT = Option("-o", "--output", metavar="FILE|DIR", type=dash_is_stdout,
                       help="cdx: write FILE (local or s3://; gzipped when it ends in .gz), "
                            "which appears only once complete, instead of printing (-: "
                            "print); parquet "
                            "(needed): the table's directory, local (replaced once the new "
                            "table is complete) or an empty s3://bucket/prefix")
EXPORT_FORMAT = Option("--format", choices=EXPORT_FORMATS, default="cdx",
                       help="cdx (default): the lines as the cluster holds them, CDXJ, or "
                            "CDX11/CDX9 after their ' CDX ...' header line; parquet: a table "
                            "in Common Crawl's columnar schema (docs/columnar.md)")

# copy
COPY_CLUSTER = CLUSTER.but(nargs="?", help="the cluster: a build's output directory, its "
                                           "cluster/ directory or cluster.idx (local, s3:// "
                                           "or http(s)://); not with --records-csv")
RECORDS_CSV = Option("--records-csv", metavar="FILE",
                     help="instead of a cluster and a selection: the records a CSV file names "
                          "(local or s3://), as Common Crawl's WARC export takes a SQL result: "
                          "the columns url, warc_filename, warc_record_offset and "
                          "warc_record_length, found by a header naming them (else the first "
                          "four, in this order); each record once, in the file's order")
DOMAINS = Option("--domains", action="append", default=[], metavar="LIST",
                 help="comma-separated domains, host names or URL prefixes (repeatable)")
DOMAINS_FILE = Option("--domains-file", action="append", default=[], metavar="FILE",
                      help="a file (local or s3://) of domains, host names or URL prefixes, one "
                           "a line, '#' starts a comment (repeatable)")
COPY_OUTPUT = Option("-o", "--output", required=True, metavar="OUT",
                     help="output directory, local or s3://bucket/prefix (the plan goes to "
                          "OUT/plan/)")
RECORDS_PER_FILE = Option("--records-per-file", type=positive, default=DEFAULT_RECORDS_PER_FILE,
                          help=f"records per output WARC file (default {DEFAULT_RECORDS_PER_FILE})")
NAME_PREFIX = Option("--name-prefix", type=file_name, default=DEFAULT_NAME_PREFIX, metavar="NAME",
                     help=f"output files are NAME-00000.warc.gz (or .warc.zst), ... (default "
                          f"{DEFAULT_NAME_PREFIX})")
WARC_PREFIX = Option("--warc-prefix", required=True, metavar="PREFIX",
                     help="where the archives named by the CDX 'filename' are: s3://bucket/ "
                          "(Common Crawl: s3://commoncrawl/), https://host/path/ or a local "
                          "directory")
THREADS = Option("--threads", type=positive, default=DEFAULT_THREADS,
                 help=f"range requests in flight per task (default {DEFAULT_THREADS})")
RETRIES = Option("--retries", type=non_negative, default=DEFAULT_RETRIES,
                 help="further reads of a record after a transient error, with backoff "
                      f"(default {DEFAULT_RETRIES})")

# zstd dictionaries and recompressing
DICT_OUTPUT = Option("-o", "--output", required=True, metavar="DICT",
                     help="the dictionary file to write (local or s3://)")
DICT_SIZE = Option("--size", type=positive, default=DEFAULT_DICT_SIZE, metavar="BYTES",
                   help=f"the dictionary's size (default {DEFAULT_DICT_SIZE}; the format asks "
                        "readers for 8 MiB at most)")
PROCESSES = Option("--processes", type=positive, metavar="N",
                   help="archives worked on at once (default: one per core)")
RECOMPRESS_OUTPUT = Option("-o", "--output", required=True, metavar="OUTPUT",
                           help="an output file (NAME.warc.zst or NAME.warc.gz) for one input; "
                                "else a directory where each input's output goes under its name")
OUTPUT_FORMAT = Option("--output-format", choices=("zst", "gz"),
                       help="with a directory OUTPUT: .warc.zst (default) or .warc.gz files")
DICTIONARY = Option("--dictionary", metavar="DICT",
                    help="a zstd dictionary (from zstd-dict) to compress with and embed in each "
                         ".warc.zst (default: none)")
LEVEL = Option("--level", type=int, metavar="N",
               help="compression level: zstd 1-22 (default 3), gzip 1-9 (default 6)")
CDX_PATH = Option("--cdx", metavar="PATH",
                  help="where the CDX goes: a file for one output, a directory for several "
                       "(default: beside each output)")
RECOMPRESS_SKIP_EXISTING = SKIP_EXISTING.but(default=False,
                                             help="leave outputs that are there with their CDX",
                                             off_help="recompress every input again (default)")

# wacz: a WACZ package of WARC files
WACZ_LINES_PER_BLOCK_DEFAULT = 1024
WACZ_OUTPUT = Option("-o", "--output", required=True, metavar="FILE.wacz",
                     help="the WACZ file to write (local), which appears only once complete")
WACZ_LINES_PER_BLOCK = LINES_PER_BLOCK.but(
    default=WACZ_LINES_PER_BLOCK_DEFAULT,
    help=f"CDXJ lines per gzip block of indexes/index.cdx.gz (default "
         f"{WACZ_LINES_PER_BLOCK_DEFAULT}, as py-wacz: a browser inflates one block of ~100-300 "
         "KB per lookup and loads index.idx whole, one line per block)")
WACZ_TITLE = Option("--title", metavar="TEXT", help="the package's title (datapackage.json)")

# how copy writes its WARC files (part of its plan)
COPY_WARC_OUTPUT = (
    OUTPUT_FORMAT.but(default="gz",
                      help="gz (default): .warc.gz files, the members of .warc.gz sources as "
                           "they were, other records compressed into members of their own; "
                           "zst: .warc.zst files (a zstd frame per record), each with its own "
                           "dictionary, trained on its records or --dictionary"),
    DICTIONARY.but(help="with --output-format zst: the dictionary of every output file "
                        "(embedded in each; default: one trained on each file's records)"),
    LEVEL.but(help="the level of what copy compresses: zstd 1-22 (default 3) with "
                   "--output-format zst, else gzip 1-9 (default 6) for the records of "
                   ".warc.zst and .warc sources"),
)

# the jobs' own
CDX_DIR = Option("--cdx-dir", required=True,
                 help="where the .cdx.gz files go (mirrors the archive names)")
SPLITS_DIR = Option("--splits-dir", required=True,
                    help="where splits.txt and splits.seq are written")
SCALER = Option("--scaler", type=int, default=100,
                help="sample lines per shard (default 100, as production)")
CLUSTER_DIR = Option("--cluster-dir", required=True,
                     help="where cdx-NNNNN.gz and part-NNNNN are written")
SPLITS = FileOption("--splits", required=True, help="splits.txt from sample_splits")
PARTITIONS = FileOption("--partitions",
                        help="partitions.seq from sample_splits: on Hadoop/EMR, reducer i then "
                             "writes shard i (TotalOrderPartitioner)")
TABLE_DIR = Option("--table-dir",
                   help="where each shard's files of a columnar table are written (with "
                        "--crawl: build --parquet)")
COPY_DIR = Option("--copy-dir", required=True,
                  help="where the plan is and the WARC files go (local or s3://)")
PROGRESS_DIR = Option("--progress-dir",
                      help="a local directory for progress files (same machine only)")

# corpus
CORPUS = (
    Option("--out", required=True, metavar="DIR", help="output directory (created if missing)"),
    Option("--files", type=positive, default=2, help="archive files (default 2)"),
    Option("--captures", type=positive, default=1000, help="captures per file (default 1000)"),
    Option("--seed", type=int, default=1,
           help="seed of the made-up web and its crawl: the same seed, the same bytes (default 1)"),
    Option("--mean-kb", type=float, default=20.0,
           help="mean HTML/binary payload size, in KB (default 20)"),
    Option("--hosts", type=positive, default=200, help="host names of the made-up web (default 200)"),
    Option("--format", choices=("warc", "arc"), default="warc", help="WARC (default) or ARC files"),
    Flag("gzip", True, "one gzip member per record (default)", "plain records"),
)


# Options of the jobs that name local directories (or prefixes) the tasks write or read
PATH_OPTIONS = (CDX_DIR, INPUT_ROOT, SPLITS_DIR, CLUSTER_DIR, COPY_DIR, WARC_PREFIX, PROGRESS_DIR)
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
    OPTIONS = (BUILD_SHARDS, BUILD_LINES_PER_BLOCK, SPLITS_FROM, UPDATE, REMOVE,
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
    OPTIONS = (WACZ_LINES_PER_BLOCK, WACZ_TITLE, INPUT_ROOT, ON_ERROR, PROGRESS, *ENGINE)


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
