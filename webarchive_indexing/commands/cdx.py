"""``webarchive-index cdx``: archives indexed in this process, one after the other, into
one sorted index (their sorted lines merged) or into one .cdx.gz per archive."""
import os
import time

from .. import storage
from ..cdx.cdxline import header_line
from ..cdx.indexer import index_file


def lines(archives, settings, errors, warnings, zstd_dictionary):
    """The header line and the lines of ``archives`` as one sorted index, as pywb reads one;
    their problems added to ``errors`` and ``warnings``. ``settings``: ``cdx``'s arguments."""
    yield header_line(settings.cdx_format)
    if len(archives) == 1:
        for indexed in _indexed(archives, settings, errors, warnings, zstd_dictionary):
            yield from indexed
    else:
        yield from _merged(archives, settings, errors, warnings, zstd_dictionary)


def _indexed(archives, settings, errors, warnings, zstd_dictionary):
    """The sorted lines of each archive indexed (up to the first problem, with ``--on-error
    fail``), one list at a time; its problems added to ``errors`` and ``warnings``."""
    for archive in archives:
        if errors and settings.on_error == "fail":
            return
        result = index_file(archive.path, archive.name, settings.cdx_format,
                            cdx_fields=settings.cdx_fields, zstd_dictionary=zstd_dictionary,
                            zstd_verify=settings.zstd_verify,
                            post_append=settings.post_append,
                            trust_wacz_index=settings.trust_wacz_index)
        errors += [e.as_dict() for e in result.errors]
        warnings += result.warning_dicts()
        if result.errors and settings.on_error == "fail":
            return
        yield result.lines


def _merged(archives, settings, errors, warnings, zstd_dictionary):
    """The lines of several archives as one sorted index: each archive's, a sorted run on
    disk, then all merged, in bounded memory."""
    import tempfile
    from ..build.merge import FAN_IN, MEMORY
    from ..build.runs import chunk_bytes_for, merge, merge_runs, write_run
    with tempfile.TemporaryDirectory(prefix="webarchive-index-cdx-") as work_dir:
        runs = [write_run([[line[:-1].encode() for line in lines]],
                          os.path.join(work_dir, f"{i}.run"))
                for i, lines in enumerate(_indexed(archives, settings, errors, warnings,
                                                   zstd_dictionary))]
        runs = merge_runs(runs, work_dir, FAN_IN, MEMORY)
        size = chunk_bytes_for(len(runs), MEMORY)
        for chunk in merge([run.chunks(0, size) for run in runs]):
            yield b"\n".join(chunk).decode() + "\n"


def index_files(found, settings, errors, zstd_dictionary):
    """``cdx -o``: a .cdx.gz per archive of ``found`` under ``settings.output``, with
    progress; the ``build.Summary`` of what was done."""
    from ..build.tasks import Indexing, index_archive
    from ..storage.lock import hold
    from ..util.progress import Progress
    from ..build.summary import Summary
    started = time.monotonic()
    summary = Summary(storage.abspath(settings.output), errors=errors,
                      warnings=list(found.warnings))
    progress = Progress()
    with hold(summary.out_dir, "cdx"):
        storage.remove_temp_files(summary.out_dir, recursive=True)  # of a killed run
        progress.step(f"indexing {len(found.archives)} archives", count=lambda: summary.archives,
                      total=len(found.archives))
        try:
            for archive in found.archives:
                if summary.errors and settings.on_error == "fail":
                    break
                summary.add(index_archive(archive.path, archive.name, summary.out_dir,
                                          Indexing.of(settings, on_error="skip",
                                                      zstd_dictionary=zstd_dictionary)))
        finally:
            progress.done()
    summary.seconds = time.monotonic() - started
    return summary
