#!/usr/bin/env bash
# The whole pipeline: index, sample, cluster, then check and publish the cluster.
# Settings come from index_env.sh; see --help and docs/hadoop-and-emr.md.
set -euo pipefail

PROG=$(basename "$0")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")

usage() {
    cat <<EOF
Usage: $PROG [-r RUNNER] [-- JOB_ARGS...]

Run the three jobs, then publish the cluster:
  1. scripts/runindexwarcs.sh   WARC_MANIFEST -> CDX_DIR/<name>.cdx.gz
  2. scripts/runsample.sh       CDX_DIR -> SPLITS_DIR/splits.txt, splits.seq, partitions.seq
  3. scripts/runzipcluster.sh   CDX_DIR -> CLUSTER_DIR/cdx-NNNNN.gz, part-NNNNN
  4. webarchive-index finalize "\$CLUSTER_DIR" --shards "\$SHARDS" [--location \$CLUSTER_LOCATION]
     checks every shard against its index, then writes cluster.loc and cluster.idx.

Options:
  -r, --runner RUNNER  emr, hadoop, local or inline (default: \$RUNNER)
  -h, --help           this help
  -- JOB_ARGS...       passed to all three jobs

Settings are read from \$INDEX_ENV (default ./index_env.sh; copy
index_env.sample.sh):
  WARC_MANIFEST    the archives to index, one path or URI a line
  CDX_DIR          per-archive CDX files (local path, or s3://...)
  SPLITS_DIR       split points
  CLUSTER_DIR      the ZipNum cluster (a new directory for every build)
  SHARDS           shards of the cluster (Common Crawl: 300)
  LINES_PER_BLOCK  CDX lines per gzip block (3000)
  RUNNER           emr | hadoop | local | inline
  MRJOB_CONF       mrjob.conf of the emr and hadoop runners (see mrjob.conf.sample);
                   local and inline use it if it is there
Optional: INPUT_ROOT, CDX_FORMAT, ON_ERROR, CDX_INPUT, CLUSTER_LOCATION (where
readers find the shards, for cluster.loc), PYTHON, EXTRA_ARGS, INDEX_ARGS,
SAMPLE_ARGS, CLUSTER_ARGS, WHEEL_DIR, BUILD_WHEEL; see each step's --help.

Exit status: 0 done, 1 a step failed (nothing published), 2 bad usage or settings.
EOF
}

# the arguments, INDEX_ENV and the helpers every launcher shares
# shellcheck source-path=SCRIPTDIR source=launcher-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/launcher-common.sh"

# check everything before the first job starts
require WARC_MANIFEST CDX_DIR SPLITS_DIR CLUSTER_DIR SHARDS LINES_PER_BLOCK RUNNER
check_runner
check_mrjob_conf
require_whole_numbers SHARDS LINES_PER_BLOCK
refuse_published_cluster

# the steps read the same settings file, whatever its path
INDEX_ENV=$(cd "$(dirname "$INDEX_ENV")" && pwd)/$(basename "$INDEX_ENV")
export INDEX_ENV

step() {
    echo "$PROG: == $1" >&2
    shift
    "$@" || { status=$?; echo "$PROG: step failed (exit status $status); nothing was published" >&2
              exit $(( status == 2 ? 2 : 1 )); }
}
step "1/4 index archives" "$HERE/runindexwarcs.sh" -r "$RUNNER" -- "${PASSTHRU[@]}"
step "2/4 sample split points" "$HERE/runsample.sh" -r "$RUNNER" -- "${PASSTHRU[@]}"
step "3/4 write shards" "$HERE/runzipcluster.sh" -r "$RUNNER" -- "${PASSTHRU[@]}"

FINALIZE=(webarchive-index)
command -v webarchive-index >/dev/null 2>&1 || FINALIZE=("${PYTHON:-python3}" -m webarchive_indexing.cli)
LOCATION=()
[ -z "${CLUSTER_LOCATION:-}" ] || LOCATION=(--location "$CLUSTER_LOCATION")
step "4/4 check the shards and publish cluster.idx" \
    "${FINALIZE[@]}" finalize "$CLUSTER_DIR" --shards "$SHARDS" "${LOCATION[@]}"
echo "$PROG: done: $CLUSTER_DIR/cluster.idx" >&2
