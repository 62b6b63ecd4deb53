#!/usr/bin/env bash
# Copy the captures of some domains or URL prefixes into new WARC files (jobs/remote_copy.py).
# Settings come from index_env.sh; see --help and docs/remote-copy.md.
set -euo pipefail

PROG=$(basename "$0")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
    cat <<EOF
Usage: $PROG [-r RUNNER] [-- JOB_ARGS...]

Copy the records of the captures selected by COPY_DOMAINS / COPY_DOMAINS_FILE (or
named by COPY_RECORDS_CSV) from the archives under WARC_PREFIX into
COPY_OUTPUT/NAME-NNNNN.warc.gz, each with its CDXJ index NAME-NNNNN.cdxj:
  1. webarchive-index copy plan: the selected lines of the cluster COPY_CLUSTER
     (or the records of the CSV), split into COPY_OUTPUT/plan/NAME-NNNNN.cdx
     (RECORDS_PER_FILE lines each) and listed in COPY_OUTPUT/plan/chunks.txt; an
     existing plan of the same copy is kept
  2. jobs/remote_copy.py over chunks.txt: one output file per map task
     (NLineInputFormat), COPY_THREADS range requests in flight per task; outputs
     that are complete already are skipped
  3. webarchive-index copy status: what was copied, which records failed and why
Rerun the same command to finish a copy that failed or was stopped.

Options:
  -r, --runner RUNNER  emr, hadoop, local or inline (default: \$RUNNER)
  -h, --help           this help
  -- JOB_ARGS...       passed to the job as they are (e.g. --threads 32)

Settings are read from \$INDEX_ENV (default ./index_env.sh; copy
index_env.sample.sh). Required here:
  COPY_CLUSTER     the cluster: a build's output, its cluster/ or cluster.idx
                   (local, s3:// or https://)
  COPY_DOMAINS     comma-separated domains, host names or URL prefixes, or
  COPY_DOMAINS_FILE  a file of them, one a line (either or both)
  or, instead of these three:
  COPY_RECORDS_CSV a CSV of the records to copy (a SQL result over a columnar
                   index: url, warc_filename, warc_record_offset,
                   warc_record_length; local or s3://)
  COPY_OUTPUT      where the WARC files go: s3://bucket/prefix (emr, hadoop), or
                   a local directory (local, inline)
  WARC_PREFIX      where the archives named by the CDX filename are
                   (Common Crawl: s3://commoncrawl/; https://host/ or a directory)
  RUNNER           emr | hadoop | local | inline
  MRJOB_CONF       mrjob.conf of the emr and hadoop runners (see mrjob.conf.sample);
                   local and inline use it if it is there
Optional:
  RECORDS_PER_FILE records per output file (default 10000)
  NAME_PREFIX      output names NAME-NNNNN (default extract)
  COPY_THREADS     range requests in flight per task (default 16)
  COPY_RETRIES     further reads of a record after transient errors (default 5)
  COPY_OUTPUT_FORMAT  gz (default) or zst: .warc.zst outputs, each with its own dictionary
  COPY_DICTIONARY  with zst: the dictionary of every output (default: trained per file)
  COPY_LEVEL       compression level (zstd 1-22, default 3; gzip 1-9, default 6)
  ZSTD_DICTIONARY  the dictionary of .warc.zst sources without their own (a path or URI
                   every task can read)
  PYTHON           interpreter for the job and the plan (default python3)
  EXTRA_ARGS, COPY_ARGS     more job arguments (bash arrays or words)
  WHEEL_DIR, BUILD_WHEEL    emr: where the package wheel for bootstrap.sh is built

Selection: example.com or *.example.com is the domain and all its subdomains
(not examples.com); example.com/path or http://example.com/a* a URL prefix.

Exit status: 0 every record copied, 1 the job failed or some records could not
be copied (see the .failures.json files named), 2 bad usage or settings.
EOF
}

# the arguments, INDEX_ENV and the helpers every launcher shares
# shellcheck source-path=SCRIPTDIR source=launcher-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/launcher-common.sh"

# the settings this copy needs, checked before anything runs
if [ -n "${COPY_RECORDS_CSV:-}" ]; then
    [ -z "${COPY_CLUSTER:-}${COPY_DOMAINS:-}${COPY_DOMAINS_FILE:-}" ] ||
        fail_usage "COPY_RECORDS_CSV names the records itself: set no COPY_CLUSTER, COPY_DOMAINS or COPY_DOMAINS_FILE with it"
else
    require COPY_CLUSTER
fi
require COPY_OUTPUT WARC_PREFIX RUNNER
check_runner
check_mrjob_conf
if [ -z "${COPY_RECORDS_CSV:-}" ] && [ -z "${COPY_DOMAINS:-}" ] && [ -z "${COPY_DOMAINS_FILE:-}" ]; then
    fail_usage "COPY_DOMAINS is not set: define it (or COPY_DOMAINS_FILE, or COPY_RECORDS_CSV) in $INDEX_ENV (see --help)"
fi
for name in RECORDS_PER_FILE COPY_THREADS; do
    [ -z "${!name:-}" ] || require_whole_numbers "$name"
done
[ -z "${COPY_RETRIES:-}" ] || [[ $COPY_RETRIES =~ ^[0-9]+$ ]] ||
    fail_usage "COPY_RETRIES is '$COPY_RETRIES': expected a whole number (0 or more)"
if [ "$RUNNER" = emr ] && [[ $COPY_OUTPUT != s3://* ]]; then
    fail_usage "COPY_OUTPUT is '$COPY_OUTPUT': on emr the tasks write the files, so it must be s3://bucket/prefix"
fi

# tasks run in directories of their own: local paths are made absolute
absolute() { case $1 in *://*|/*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
COPY_OUTPUT=$(absolute "$COPY_OUTPUT")
WARC_PREFIX=$(absolute "$WARC_PREFIX")

PY=${PYTHON:-python3}
CLI=("$PY" -m webarchive_indexing.cli)

# 1. the plan (kept if this copy made one before; another copy's is refused)
PLAN=("${CLI[@]}" copy plan -o "$COPY_OUTPUT")
[ -z "${COPY_RECORDS_CSV:-}" ] || PLAN+=(--records-csv "$COPY_RECORDS_CSV")
[ -z "${COPY_CLUSTER:-}" ] || PLAN+=("$COPY_CLUSTER")
[ -z "${COPY_DOMAINS:-}" ] || PLAN+=(--domains "$COPY_DOMAINS")
[ -z "${COPY_DOMAINS_FILE:-}" ] || PLAN+=(--domains-file "$COPY_DOMAINS_FILE")
[ -z "${RECORDS_PER_FILE:-}" ] || PLAN+=(--records-per-file "$RECORDS_PER_FILE")
[ -z "${NAME_PREFIX:-}" ] || PLAN+=(--name-prefix "$NAME_PREFIX")
[ -z "${COPY_OUTPUT_FORMAT:-}" ] || PLAN+=(--output-format "$COPY_OUTPUT_FORMAT")
[ -z "${COPY_DICTIONARY:-}" ] || PLAN+=(--dictionary "$COPY_DICTIONARY")
[ -z "${COPY_LEVEL:-}" ] || PLAN+=(--level "$COPY_LEVEL")
echo "$PROG: == 1/3 plan" >&2
status=0
CHUNKS=$("${PLAN[@]}") || status=$?
if [ $status -ne 0 ]; then
    echo "$PROG: planning failed (exit status $status)" >&2
    exit $(( status == 2 ? 2 : 1 ))
fi
if [ -z "$CHUNKS" ]; then
    echo "$PROG: nothing selected: nothing to copy" >&2
    exit 0
fi

# 2. the job: its input is chunks.txt; local and inline read job input from local disk
INPUT=$(hadoop_uri "$CHUNKS")
if { [ "$RUNNER" = local ] || [ "$RUNNER" = inline ]; } && [[ $CHUNKS == *://* ]]; then
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
    INPUT=$WORK/chunks.txt
    "$PY" -c 'import sys; from webarchive_indexing import storage; storage.download(*sys.argv[1:])' \
        "$CHUNKS" "$INPUT"
fi
CMD=("$PY" "$REPO/jobs/remote_copy.py" -r "$RUNNER" "${CONF_ARGS[@]}"
     --copy-dir "$COPY_OUTPUT" --warc-prefix "$WARC_PREFIX")
[ -z "${COPY_THREADS:-}" ] || CMD+=(--threads "$COPY_THREADS")
[ -z "${COPY_RETRIES:-}" ] || CMD+=(--retries "$COPY_RETRIES")
[ -z "${ZSTD_DICTIONARY:-}" ] || CMD+=(--zstd-dictionary "$(absolute "$ZSTD_DICTIONARY")")
add_words EXTRA_ARGS
add_words COPY_ARGS
CMD+=("${PASSTHRU[@]}" "$INPUT")

echo "$PROG: == 2/3 copy" >&2
build_wheel
show_cmd
job=0
"${CMD[@]}" || job=$?
[ $job -eq 0 ] || echo "$PROG: the copy job failed (exit status $job)" >&2

# 3. what was copied: the exit status says whether every record was
echo "$PROG: == 3/3 status" >&2
"${CLI[@]}" copy status "$COPY_OUTPUT" >&2 || exit 1
[ $job -eq 0 ] || exit 1
