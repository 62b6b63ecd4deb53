"""The table, continued: the options of the commands that write what they take out of a
cluster or archives (export, copy, zstd-dict, recompress, wacz), the jobs' own, corpus's."""
from .base import (FileOption, Flag, Option, dash_is_stdout, file_name, non_negative, positive)
from .table import (CLUSTER, DEFAULT_DICT_SIZE, DEFAULT_NAME_PREFIX, DEFAULT_RECORDS_PER_FILE,
                    DEFAULT_RETRIES, DEFAULT_THREADS, EXPORT_FORMATS, INPUT_ROOT, LINES_PER_BLOCK,
                    SKIP_EXISTING)


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
WACZ_PAGE_TITLES = Flag(
    "page-titles", True,
    "give each page of pages.jsonl the <title> of its HTML (default): one ranged read of at "
    "most 64 KB of its record",
    "list the pages without titles (no read per page: e.g. of WARC files on S3)")
WACZ_WARC_PREFIX = WARC_PREFIX.but(
    required=False, help="of a cluster: where the WARC files its lines name are (the "
                         "directory it was built of, or s3://, http(s)://), as for copy")

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
