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
  MRJOB_CONF       mrjob.conf to use (see mrjob.conf.sample)
Optional: INPUT_ROOT, CDX_FORMAT, ON_ERROR, CDX_INPUT, CLUSTER_LOCATION (where
readers find the shards, for cluster.loc), PYTHON, EXTRA_ARGS, INDEX_ARGS,
SAMPLE_ARGS, CLUSTER_ARGS, WHEEL_DIR, BUILD_WHEEL; see each step's --help.

Exit status: 0 done, 1 a step failed (nothing published), 2 bad usage or settings.
EOF
}

fail_usage() { echo "$PROG: $*" >&2; exit 2; }

RUNNER_FLAG= PASSTHRU=()
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) usage; exit 0 ;;
        -r|--runner) [ $# -ge 2 ] || fail_usage "$1 needs a value: emr, hadoop, local or inline"
                     RUNNER_FLAG=$2; shift 2 ;;
        --runner=*) RUNNER_FLAG=${1#--runner=}; shift ;;
        --) shift; PASSTHRU=("$@"); break ;;
        *) fail_usage "unknown argument '$1' (job arguments go after --; see --help)" ;;
    esac
done

INDEX_ENV=${INDEX_ENV:-./index_env.sh}
case $INDEX_ENV in */*) ;; *) INDEX_ENV=./$INDEX_ENV ;; esac  # never searched in $PATH
[ -f "$INDEX_ENV" ] || fail_usage "settings file $INDEX_ENV not found: copy index_env.sample.sh to index_env.sh and edit it (or set INDEX_ENV)"
# shellcheck source=/dev/null
source "$INDEX_ENV"
[ -z "$RUNNER_FLAG" ] || RUNNER=$RUNNER_FLAG

# check everything before the first job starts
for name in WARC_MANIFEST CDX_DIR SPLITS_DIR CLUSTER_DIR SHARDS LINES_PER_BLOCK RUNNER MRJOB_CONF; do
    [ -n "${!name:-}" ] || fail_usage "$name is not set: define it in $INDEX_ENV (see index_env.sample.sh)"
done
case $RUNNER in emr|hadoop|local|inline) ;; *) fail_usage "RUNNER is '$RUNNER': expected emr, hadoop, local or inline" ;; esac
for name in SHARDS LINES_PER_BLOCK; do
    [[ ${!name} =~ ^[1-9][0-9]*$ ]] || fail_usage "$name is '${!name}': expected a whole number of at least 1"
done
if [[ $CLUSTER_DIR != *://* ]] && [ -e "$CLUSTER_DIR/cluster.idx" ]; then
    fail_usage "$CLUSTER_DIR already holds a published cluster (cluster.idx): use a new CLUSTER_DIR or remove that one"
fi

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
