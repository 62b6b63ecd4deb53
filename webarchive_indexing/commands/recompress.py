"""``webarchive-index recompress``: WARC files into ``.warc.zst`` or per-record ``.warc.gz``,
their records' bytes unchanged, each output indexed.

    summary = recompress(["a.warc.gz"], "a.warc.zst", RecompressOptions(dictionary="crawl.dict"))

Inputs are ``.warc.gz`` (compressed record by record, or as a whole: the mistake
warcio's ``recompress`` mends), plain ``.warc`` or ``.warc.zst`` files; their records
are found in the uncompressed bytes (``raw``) and each is compressed alone:
into one zstd frame (several, for a record over ``raw.PIECE``), with its size,
a checksum and the dictionary's id, after a dictionary frame that embeds the
dictionary (IIPC warc-zstd 1.0); or into one gzip member. The output's format comes
from its name (``.warc.zst``, ``.warc.gz``); an OUTPUT that is no such name is a
directory, where each input's output goes under its name (``--output-format``).

Each output is written whole or not at all, then indexed (which reads it back: an
output our reader cannot read, or that holds fewer records than its input, is removed
and reported), and its CDX written beside it (``name.cdxj``) or under ``cdx``. Many
inputs are recompressed in parallel, a process per core.
"""
import time
from dataclasses import dataclass, field

from ..cdx import indexer
from ..cdx.cdxline import header_line
from .. import storage
from ..inputs.discovery import InputError, archive_stem, check_outputs, dictionary_file, expand_all
from ..options import RecompressOptions, compression_level
from ..util.progress import Progress
from ..warc.walk import ArchiveError
from ..util.workers import run_each
from ..warc.raw import open_records, record_writer
from ..warc.zstdwarc import load_dictionary

FORMATS = {".warc.zst": "zst", ".warc.gz": "gz"}
CDX_EXTENSIONS = {"cdxj": ".cdxj", "cdx11": ".cdx", "cdx9": ".cdx"}


@dataclass
class Summary:
    archives: int = 0
    skipped: int = 0
    records: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    outputs: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    seconds: float = 0.0


def output_format(name):
    """"zst" or "gz" for an output file name, else None (a directory)."""
    for ext, fmt in FORMATS.items():
        if name.endswith(ext):
            return fmt
    return None


def plan(inputs, output, options):
    """The work: (fmt, level, [(input, output, cdx, name in the CDX)], warnings of what the
    inputs left out); InputError (or UsageError) for options that cannot work, or outputs
    that are inputs (``check_output``), before anything is written."""
    fmt = output_format(output)
    # (outputs are named by recompress's own rule, checked below, not by ``cdx_name``)
    found = expand_all(inputs, options.input_root, [output], cdx_names=False)
    archives = found.archives
    if fmt and options.output_format and options.output_format != fmt:
        raise InputError(f"--output-format {options.output_format} and the output "
                         f"{output} disagree")
    if fmt and len(archives) > 1:
        raise InputError(f"{len(archives)} archives cannot go into the one file "
                         f"{output}: give a directory as -o")
    fmt = fmt or options.output_format or "zst"
    level = compression_level(fmt, options.level)
    if options.dictionary and fmt != "zst":
        raise InputError("--dictionary goes with a .warc.zst output")
    ext = next(e for e, f in FORMATS.items() if f == fmt)
    cdx_ext = CDX_EXTENSIONS[options.cdx_format]
    work = []
    for archive in archives:
        if output_format(output):
            target, name = output, output.rsplit("/", 1)[-1]
            cdx_path = options.cdx or archive_stem(target) + cdx_ext
        else:
            name = archive_stem(archive.name) + ext
            target = storage.join(output, name)
            cdx_path = storage.join(options.cdx or output, archive_stem(name) + cdx_ext)
        work.append((archive.path, storage.abspath(target), storage.abspath(cdx_path), name))
    check_outputs([written for _, target, cdx_path, _ in work for written in (target, cdx_path)],
                  [a.path for a in archives] + [d for d in (options.dictionary,
                                                            options.zstd_dictionary) if d])
    outputs = {}
    for path, target, cdx_path, _ in work:
        for written in (target, cdx_path):
            other = outputs.setdefault(written, path)
            if other != path:
                raise InputError(f"{other} and {path} would both be recompressed into "
                                 f"{written}: rename one, or recompress them apart")
    return fmt, level, work, found.warnings


def recompress(inputs, output, options=None):
    """Recompress every archive ``inputs`` name into ``output`` as ``options`` (a
    ``RecompressOptions``) say; a ``Summary`` (problems in ``errors``, one dict per
    problem, with its file and offset). Raises InputError or UsageError for options that
    cannot work (nothing is written then)."""
    options = options or RecompressOptions()
    started = time.monotonic()
    fmt, level, work, warnings = plan(inputs, output, options)
    dictionary, zstd_dictionary = (dictionary_file(options.dictionary),
                                   dictionary_file(options.zstd_dictionary))
    progress = Progress(enabled=options.progress)
    summary, done = Summary(archives=len(work), warnings=warnings), [0]
    progress.step(f"recompressing {len(work)} archives", count=lambda: done[0], total=len(work))
    try:
        jobs = [(*job, fmt, level, dictionary, options.cdx_format, zstd_dictionary,
                 options.skip_existing) for job in work]
        for status in run_each(recompress_file, jobs, options.processes):
            done[0] += 1
            summary.skipped += status["skipped"]
            summary.records += status["records"]
            summary.input_bytes += status["input_bytes"]
            summary.output_bytes += status["output_bytes"]
            summary.errors += status["errors"]
            if not status["errors"]:
                summary.outputs.append(status["output"])
    finally:
        progress.done()
    summary.seconds = time.monotonic() - started
    return summary


def recompress_file(source, target, cdx_path, name, fmt, level, dictionary=None,
                    cdx_format="cdxj", zstd_dictionary=None, skip_existing=False):
    """Recompress one WARC file into ``target`` and index it into ``cdx_path`` (filename
    ``name``); a status dict. Problems are in its ``errors``: then what was there before
    is left as it was, unless the new output was published already (it is removed then,
    with the CDX that describes another one)."""
    status = {"input": source, "output": target, "cdx": cdx_path, "skipped": False,
              "records": 0, "input_bytes": 0, "output_bytes": 0, "errors": []}
    published = False
    try:
        if skip_existing and storage.exists(target) and storage.exists(cdx_path):
            status.update(skipped=True, output_bytes=storage.size(target))
            return status
        status["input_bytes"] = storage.size(source)
        with storage.open_atomic(target) as fh, open_records(source, zstd_dictionary) as records:
            write = record_writer(fh, fmt, level, load_dictionary(dictionary) if dictionary
                                  else None)
            for record in records:
                write(record.pieces)
                status["records"] += 1
        published = True
        status["output_bytes"] = storage.size(target)
        # every frame decompressed and checked: the read back is the output's check
        result = indexer.index_file(target, name, cdx_format, zstd_verify=True)
        if result.errors or result.records != status["records"]:
            problem = result.errors[0].reason if result.errors else (
                f"{result.records} records read back, {status['records']} written")
            raise ArchiveError(target, 0, f"the output does not read back right (removed): {problem}")
        storage.write_atomic(cdx_path, (header_line(cdx_format) + "".join(result.lines)).encode())
    except ArchiveError as exc:
        status["errors"].append(exc.as_dict())
    except OSError as exc:  # unreadable input, full disk, no permission
        status["errors"].append(ArchiveError(exc.filename or source, 0,
                                             exc.strerror or str(exc)).as_dict())
    if status["errors"] and published:
        for path in (target, cdx_path):
            try:
                storage.remove(path)
            except OSError:
                pass
    return status
