"""The table: every option of the command line, the jobs and the Spark entry script,
declared once, and the defaults other modules use too."""
from ..cdx.cdxline import CDX_FIELDS as CDX_FIELD_SETS, FORMATS
from .base import (Flag, Option, MAX_SHARDS, non_negative, nonzero, positive, seconds,
                   shard_count)

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
# The deflates of a ZipNum block (zipnum.layout compresses with each): NAME-LEVEL. By
# bench/build.py, libdeflate-5 writes shards ~1% smaller than zlib-6 in a third of its time
# (isal-1/2 in a twelfth, but ~8% larger). A cluster built before the choice is zlib-6.
BLOCK_DEFLATES = (*(f"libdeflate-{n}" for n in range(1, 13)), *(f"zlib-{n}" for n in range(1, 10)),
                  *(f"isal-{n}" for n in range(4)))
BLOCK_DEFLATE_DEFAULT = "libdeflate-5"
BLOCK_DEFLATE_OLD = "zlib-6"
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
TRUST_WACZ_INDEX = Flag(
    "trust-wacz-index", False,
    "of a WACZ with an index of its own (indexes/*.cdx, .cdxj, .cdx.gz) whose datapackage.json "
    "hashes (and datapackage-digest.json) check out: take its lines, pointed into the WACZ, "
    "instead of reading its WARC files; else say why and read them",
    "read the WARC files of every WACZ (default)")
ZSTD_DICTIONARY = Option("--zstd-dictionary", metavar="FILE",
                         help="the zstd dictionary of .warc.zst inputs that do not hold their "
                              "own (a dictionary frame at the start of a file is used where "
                              "there is one); local, s3:// or http(s)://")
ZSTD_VERIFY = Flag(
    "zstd-verify", False,
    "decompress every zstd frame of .warc.zst inputs whole and check it (its checksum, and "
    "the newlines after each record), as the zstd tool does: slower",
    "pass over the payloads the index does not read (as recompress writes them, a block "
    "apart from the record's headers) without decompressing them, so unchecked (default)")
INDEXING = (CDX_FORMAT, CDX_FIELDS, POST_APPEND, INPUT_ROOT, SKIP_EXISTING, ZSTD_DICTIONARY,
            ZSTD_VERIFY, TRUST_WACZ_INDEX)
# what build takes of them, with index inputs (an update keeps the cluster's POST keys)
BUILD_INDEXING = (BUILD_CDX_FORMAT, CDX_FIELDS,
                  POST_APPEND.but(default=None, off_help=POST_APPEND.off_help[:-len("(default)")]
                                  + "(default; an update: as the cluster was built)"),
                  INPUT_ROOT, SKIP_EXISTING, LEGACY_PREFIX, REKEY, ZSTD_DICTIONARY,
                  ZSTD_VERIFY, TRUST_WACZ_INDEX)

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
BLOCK_DEFLATE = Option(
    "--block-deflate", choices=BLOCK_DEFLATES, default=BLOCK_DEFLATE_DEFAULT, metavar="NAME-LEVEL",
    help=f"the deflate that compresses each block: libdeflate-1..12, zlib-1..9 or isal-0..3 "
         f"(default {BLOCK_DEFLATE_DEFAULT}: a third of zlib-6's time, its shards no larger; "
         f"{BLOCK_DEFLATE_OLD}: the bytes of earlier versions and of the original jobs); "
         "every one writes standard gzip members, read by every ZipNum reader")
# build's: None until known (an update keeps its cluster's)
BUILD_BLOCK_DEFLATE = BLOCK_DEFLATE.but(default=None)
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
URL = Option("url", metavar="URL", param="url", nargs="?",
             help="a URL (example.com/path), or a pattern: example.com/path* (prefix), "
                  "*.example.com (domain); none with --check")
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
QUERY_CHECK = Option("--check", metavar="URLS",
                     help="instead of a query: the access of each URL [TIMESTAMP] line of the "
                          "file URLS (- : stdin) under the rules the query would apply (--acl, "
                          "--acl-user, --acl-default, --embargo), a JSON line each, as serve's "
                          "/NAME/ap/AP/check and acl check answer; from the rules alone, as "
                          "OutbackCDX's check: whether CLUSTER holds captures of a URL is a "
                          "query's (URL --count), and CLUSTER is not read; exit status 1 if a "
                          "line could not be checked (named with its number)")
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
