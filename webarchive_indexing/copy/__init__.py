"""Copy the captures of some domains, hosts or URL prefixes out of a web archive collection,
found through its ZipNum cluster, into new WARC files: ``webarchive-index copy``.

    from webarchive_indexing import copy
    from webarchive_indexing.zipnum.reader import open_cluster

    inputs = copy.parse_selection(["example.com", "http://example.org/blog/*"])
    cluster = open_cluster("s3://bucket/index")
    per_input, total = copy.check(cluster, inputs)          # captures, WARC files, bytes
    plan = copy.ensure_plan(cluster, "s3://bucket/index", inputs, "out", records_per_file=10000)
    plan = copy.ensure_csv_plan("records.csv", "out")        # or the records a CSV names
    for chunk in plan.chunk_paths():                         # one task each (job, Spark, here)
        copy.run_chunk(chunk, copy.ChunkSettings("out", "s3://commoncrawl/", threads=16))

or all of it, through an engine, and what an output holds of its plan:
``commands.copy.copy(CopyOptions(...))``, ``commands.copy.survey("out")``.

One module per concern, each a set of plain functions used alike by the MRJob job
(``jobs/remote_copy.py``), Spark (``engines``), the command line and the tests:

* ``selection``: inputs as SURT key ranges, merged so that a record is selected once;
  ``check``, per input and in total, the captures, distinct WARC files and bytes a copy
  takes, from the index alone;
* ``plan``: one pass over the matching index lines (streamed, constant memory) into
  chunk files, one per output, in index order (``OUT/plan/``);
* ``csvrecords``: the records a CSV names instead (Common Crawl's CSV of a SQL result:
  ``url, warc_filename, warc_record_offset, warc_record_length``), planned in its order;
* ``fetch``: one ranged read of a record, checked to be one complete gzip member of the
  CDX length holding a WARC record, retried with backoff when it is not (or the read
  failed: 503, reset, short body); the retries of small reads and writes;
* ``write``: one chunk into ``OUT/NAME.warc.gz`` and its ``.cdxj`` (and
  ``.failures.json``), the work of one task (``run_chunk``);

The engines run ``write.run_chunk`` as their tasks; ``commands/copy.py`` drives them.
"""
from .fetch import Failed, check_member, fetch_record
from .csvrecords import read_records
from .plan import (Plan, PlanMismatch, ensure_csv_plan, ensure_plan, load_plan, make_csv_plan,
                   make_plan)
from .selection import (Input, SelectionError, check, check_source, merge_ranges, parse_input,
                        parse_selection, read_selection, read_selection_file)
from .write import ChunkSettings, ChunkStatus, copy_chunk, read_progress, run_chunk

__all__ = ["ChunkSettings", "ChunkStatus", "Failed", "Input", "Plan", "PlanMismatch",
           "SelectionError", "check", "check_member",
           "check_source", "copy_chunk", "ensure_csv_plan", "ensure_plan", "fetch_record",
           "load_plan", "make_csv_plan", "make_plan", "merge_ranges", "parse_input",
           "parse_selection", "read_progress", "read_records", "read_selection",
           "read_selection_file", "run_chunk"]
