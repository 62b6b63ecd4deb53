"""The local engine on CDX files, for bench/build.py until `webarchive-index build` takes
CDX inputs (issue 12.2) and --update: build OUT SHARDS [--splits FILE] CDX...; update OUT CDX..."""
import os
import shutil
import sys
import tempfile

from webarchive_indexing import mergebuild, pipeline, splits, steps
from webarchive_indexing.localengine import SCALER, process_pool, workers_available
from webarchive_indexing.shardrun import Removal
from webarchive_indexing.splitsource import load_splits
from webarchive_indexing.update import update_shards

LINES_PER_BLOCK = 3000


def main(argv):
    command, out = argv[0], os.path.abspath(argv[1])
    if command == "build":
        shards, rest = int(argv[2]), argv[3:]
        splits_file = None
        if rest[0] == "--splits":
            splits_file, rest = rest[1], rest[2:]
    else:
        split_lines = steps.read_splits(os.path.join(out, "splits.txt"))
        shards, rest = len(split_lines) + 1, argv[2:]
    inputs = [os.path.abspath(p) for p in rest]
    workers = workers_available()
    work = tempfile.mkdtemp(prefix="webarchive-index-bench-")
    try:
        with process_pool(workers) as pool:
            run_list, pairs, _ = mergebuild.make_runs(
                pool, inputs, [os.path.getsize(p) for p in inputs], work, workers,
                {p: mergebuild.SAMPLE_STRIDE for p in inputs}, shards * SCALER)
            sample = splits.merge(pairs, shards * SCALER)
            if command == "build":
                split_lines = (load_splits(splits_file, shards) if splits_file
                               else splits.choose_splits(sample, shards))
                os.makedirs(out, exist_ok=True)
                steps.write_splits(split_lines, out)

                def write(cluster_dir):
                    return mergebuild.write_shards(pool, run_list, split_lines, sample, cluster_dir,
                                                   work, LINES_PER_BLOCK, workers)
            else:
                def write(cluster_dir):
                    return update_shards(pool, run_list, sample, os.path.join(out, "cluster"),
                                         split_lines, Removal([]), cluster_dir, work,
                                         LINES_PER_BLOCK, workers)[0]
            pipeline._write_cluster(pipeline.Summary(out), shards,
                                    pipeline.Progress(enabled=False), write, True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
