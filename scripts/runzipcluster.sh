#!/usr/bin/env bash
# Step 3 of 3: sort every CDX line into the shards of a ZipNum cluster (jobs/zip_cluster.py).
# Settings come from index_env.sh; see --help and docs/hadoop-and-emr.md.
set -euo pipefail

PROG=$(basename "$0")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
    cat <<EOF
Usage: $PROG [-r RUNNER] [-- JOB_ARGS...]

Run jobs/zip_cluster.py: every line of the per-archive CDX files goes to its
shard (split points from the sampling step); shard i is written as
CLUSTER_DIR/cdx-0000i.gz with its index CLUSTER_DIR/part-0000i. Then publish
the cluster with:  webarchive-index finalize CLUSTER_DIR --shards SHARDS
(scripts/runall.sh runs all three steps and that).

Options:
  -r, --runner RUNNER  emr, hadoop, local or inline (default: \$RUNNER)
  -h, --help           this help
  -- JOB_ARGS...       passed to the job as they are (any mrjob or job option)

Settings are read from \$INDEX_ENV (default ./index_env.sh; copy
index_env.sample.sh). Required here:
  CDX_DIR          where the per-archive CDX files are (local path, or s3://...)
  SPLITS_DIR       where runsample.sh wrote splits.txt and partitions.seq
  CLUSTER_DIR      where the shards go (must not hold a published cluster yet)
  SHARDS           number of shards (as given to runsample.sh)
  LINES_PER_BLOCK  CDX lines per gzip block (3000 in production)
  RUNNER           emr | hadoop | local | inline
  MRJOB_CONF       mrjob.conf of the emr and hadoop runners (see mrjob.conf.sample);
                   local and inline use it if it is there
Optional:
  CDX_INPUT        what the job reads instead of CDX_DIR (path, glob or URI; on
                   hadoop, s3:// in CDX_DIR is read as s3a://)
  PYTHON           interpreter for the job (default python3)
  EXTRA_ARGS, CLUSTER_ARGS  more job arguments (bash arrays or words)
  WHEEL_DIR, BUILD_WHEEL    emr: where the package wheel for bootstrap.sh is built
                   (default build/emr-wheels; BUILD_WHEEL=0 uses what is there)

On emr and hadoop the job gets --partitions SPLITS_DIR/partitions.seq#_partition.lst
(TotalOrderPartitioner: reducer i writes shard i). On local and inline,
shards that received no lines are written empty after the job.

Exit status: 0 done, 1 the job failed, 2 bad usage or settings.
EOF
}

# the arguments, INDEX_ENV and the helpers every launcher shares
# shellcheck source-path=SCRIPTDIR source=launcher-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/launcher-common.sh"

# the settings this step needs, checked before anything runs
require CDX_DIR SPLITS_DIR CLUSTER_DIR SHARDS LINES_PER_BLOCK RUNNER
check_runner
check_mrjob_conf
require_whole_numbers SHARDS LINES_PER_BLOCK

refuse_published_cluster

CMD=("${PYTHON:-python3}" "$REPO/jobs/zip_cluster.py" -r "$RUNNER" "${CONF_ARGS[@]}"
     --splits "$(hadoop_uri "$SPLITS_DIR/splits.txt")" --shards "$SHARDS"
     --lines-per-block "$LINES_PER_BLOCK" --cluster-dir "$CLUSTER_DIR")
if [ "$RUNNER" = emr ] || [ "$RUNNER" = hadoop ]; then
    CMD+=(--partitions "$(hadoop_uri "$SPLITS_DIR/partitions.seq")#_partition.lst")
fi
add_words EXTRA_ARGS
add_words CLUSTER_ARGS
CMD+=("${PASSTHRU[@]}")
add_cdx_input

build_wheel
show_cmd
if [ "$RUNNER" = emr ] || [ "$RUNNER" = hadoop ]; then
    "${CMD[@]}"
else
    # mrjob's local and inline runners ignore partitioners: a shard that got no line has no
    # reducer call. Write those empty, as `webarchive-index build` does, so finalize finds all.
    STATS=$(mktemp)
    trap 'rm -f "$STATS"' EXIT
    "${CMD[@]}" | tee "$STATS"
    "${PYTHON:-python3}" - "$CLUSTER_DIR" "$SHARDS" "$STATS" <<'EOF'
import json, sys
from webarchive_indexing.build.tasks import write_shard
cluster_dir, shards, stats = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(stats) as fh:
    written = {json.loads(line)["shard"] for line in fh if line.strip()}
for shard in sorted(set(range(shards)) - written):
    write_shard(shard, [], cluster_dir)
EOF
fi
