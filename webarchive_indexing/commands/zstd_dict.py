"""``webarchive-index zstd-dict``: a zstd dictionary trained on the records of many archives.

    summary = train(["crawl/"], "crawl.dict", ZstdDictOptions(size=1 << 20))

A record of a .warc.zst is compressed alone, so what helps is a dictionary of what
records start with: WARC and HTTP headers, the start of HTML pages. As in the study
of Common Crawl's WARCs this follows (a dictionary trained on samples of many files),
the samples are the starts of records (``raw.record_starts``) from the start of
every file, up to ``bytes_per_file`` of each: about 100 times the dictionary's size
in all (zstd's advice), at least ``MIN_PER_FILE`` a file. Files are sampled in
parallel; zstd's trainer makes the dictionary (``zstdwarc.train_dictionary``). Its id is
taken from the samples (the same samples make the same dictionary) in the range the
warc-zstd format suggests. The file written is a plain zstd dictionary, as
``zstd --train`` writes it: ``zstd -D`` and ``recompress --dictionary`` take it.
"""
import time
from dataclasses import dataclass

from .. import storage
from ..inputs.discovery import InputError, check_output, dictionary_file, expand_all
from ..options import ZstdDictOptions
from ..util.progress import Progress
from ..warc.walk import ArchiveError
from ..util.workers import run_each
from ..warc.raw import open_records, record_starts
from ..warc.zstdwarc import DictionaryError, SAMPLES_PER_DICT_BYTE, train_dictionary

# Samples taken in all: SAMPLES_PER_DICT_BYTE times the dictionary's size; and at least this
# much a file
MIN_PER_FILE = 128 << 10
# Archives left out by name: ARC files hold no WARC records
ARC_EXTENSIONS = (".arc", ".arc.gz")
# Most sample bytes in all (held in memory, and copied, while training)
SAMPLES_MAX = 256 << 20


@dataclass
class Summary:
    archives: int = 0
    arc_files: int = 0
    samples: int = 0
    sample_bytes: int = 0
    size: int = 0
    dict_id: int = 0
    errors: list = None
    warnings: list = ()
    seconds: float = 0.0


class TrainingFailed(Exception):
    pass


def sample_file(path, budget, zstd_dictionary=None):
    """(path, samples, problems): the starts of the records of ``path`` from its start, up
    to ``budget`` bytes in all (one record at least); what was read before a problem is
    kept."""
    samples = []
    try:
        with open_records(path, zstd_dictionary) as records:
            for sample in record_starts(records, budget):
                samples.append(sample)
    except ArchiveError as exc:
        return path, samples, [exc.as_dict()]
    except OSError as exc:
        return path, samples, [ArchiveError(exc.filename or path, 0, exc.strerror or str(exc)).as_dict()]
    return path, samples, []


def train(inputs, output, options=None):
    """Sample the archives ``inputs`` name, train a dictionary of ``options.size`` bytes
    (a ``ZstdDictOptions``), write it to ``output``; a ``Summary`` (``errors``: the files
    that could not be read whole; their samples up to the problem are used). Raises
    InputError for options that cannot work and TrainingFailed when zstd cannot make a
    dictionary of them."""
    options = options or ZstdDictOptions()
    started = time.monotonic()
    # (no CDX is written: archives of one name under two roots are sampled both)
    found = expand_all(inputs, cdx_names=False)
    archives = found.archives
    check_output(output, [a.path for a in archives])
    # a .warc.zst holds WARC records: ARC files have none to sample, and are no error
    arc_files = [a for a in archives if a.path.endswith(ARC_EXTENSIONS)]
    archives = [a for a in archives if a not in arc_files]
    if not archives:
        raise InputError(f"only ARC files in {' '.join(inputs)}: a dictionary is trained on "
                         "WARC records, for .warc.zst files")
    if options.size < 1024:
        raise InputError(f"--size {options.size}: a dictionary needs 1024 bytes at least")
    zstd_dictionary = dictionary_file(options.zstd_dictionary)
    wanted = min(SAMPLES_MAX, options.size * SAMPLES_PER_DICT_BYTE)
    budget = min(max(MIN_PER_FILE, wanted // len(archives)), SAMPLES_MAX // len(archives))
    progress = Progress(enabled=options.progress)
    summary, by_file, done = (Summary(archives=len(archives), arc_files=len(arc_files),
                                      errors=[], warnings=found.warnings), {}, [0])
    progress.step(f"sampling {len(archives)} archives", count=lambda: done[0], total=len(archives))
    try:
        jobs = [(a.path, budget, zstd_dictionary) for a in archives]
        for path, samples, problems in run_each(sample_file, jobs, options.processes):
            done[0] += 1
            by_file[path] = samples
            summary.errors += problems
    finally:
        progress.done()
    # in input order, so that the same inputs give the same dictionary however they finish
    samples = [sample for a in archives for sample in by_file[a.path]]
    summary.samples, summary.sample_bytes = len(samples), sum(map(len, samples))
    progress.step(f"training a {options.size}-byte dictionary on {summary.samples} samples")
    try:
        zdict = train_dictionary(samples, options.size)
    except DictionaryError as exc:
        raise TrainingFailed(f"{exc}; give more archives or a smaller --size") from None
    finally:
        progress.done()
    data = zdict.as_bytes()
    storage.write_atomic(output, data)
    summary.size, summary.dict_id = len(data), zdict.dict_id()
    summary.seconds = time.monotonic() - started
    return summary

