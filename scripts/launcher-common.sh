# shellcheck shell=bash
# What the launchers scripts/run*.sh share: their -r/-h/-- arguments, the settings file,
# the checks of the settings, and the helpers that build, show and run a job's command.
#
# Sourced, not run: a launcher sets PROG (its name in messages), REPO (the checkout) and
# usage() (its --help text), then sources this file with no arguments, under its own
# `set -euo pipefail`. The arguments are parsed and INDEX_ENV is sourced here at the top
# level, not in functions, so that both act on the launcher itself: `shift` consumes the
# launcher's own arguments, and what index_env.sh defines (`declare` included) is global.

# a mistake in the arguments or the settings: exit status 2, before any job starts
fail_usage() { echo "$PROG: $*" >&2; exit 2; }

# -r/--runner overrides RUNNER from the settings; everything after -- goes to the job(s)
RUNNER_FLAG='' PASSTHRU=()
# shellcheck disable=SC2034  # PASSTHRU is read by the launcher
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

# The helpers are defined after the settings are sourced, so that a function of the same
# name in index_env.sh cannot replace them.

# CONF_ARGS: how a job gets MRJOB_CONF. The emr and hadoop runners need it, naming a file
# (mrjob would fail with a traceback); local and inline need none (mrjob.conf.sample has
# nothing for them): theirs is used if it is there, else none, not mrjob's default ones.
check_mrjob_conf() {
    case $RUNNER in
        emr|hadoop)
            require MRJOB_CONF
            [ -f "$MRJOB_CONF" ] || fail_usage "MRJOB_CONF is '$MRJOB_CONF': no such file: copy mrjob.conf.sample there and fill it in, or set MRJOB_CONF in $INDEX_ENV"
            CONF_ARGS=(--conf-path "$MRJOB_CONF") ;;
        *)
            if [ -n "${MRJOB_CONF:-}" ] && [ -f "$MRJOB_CONF" ]; then
                CONF_ARGS=(--conf-path "$MRJOB_CONF")
            else
                CONF_ARGS=(--no-conf)
            fi ;;
    esac
}

# each variable named must be set and not empty
require() {
    local name
    for name in "$@"; do
        [ -n "${!name:-}" ] || fail_usage "$name is not set: define it in $INDEX_ENV (see index_env.sample.sh)"
    done
}

check_runner() {
    case $RUNNER in emr|hadoop|local|inline) ;; *) fail_usage "RUNNER is '$RUNNER': expected emr, hadoop, local or inline" ;; esac
}

# each variable named (already required) must be a whole number of at least 1
require_whole_numbers() {
    local name
    for name in "$@"; do
        [[ ${!name} =~ ^[1-9][0-9]*$ ]] || fail_usage "$name is '${!name}': expected a whole number of at least 1"
    done
}

# a published cluster is never overwritten (only a local CLUSTER_DIR can be checked here)
refuse_published_cluster() {
    if [[ $CLUSTER_DIR != *://* ]] && [ -e "$CLUSTER_DIR/cluster.idx" ]; then
        fail_usage "$CLUSTER_DIR already holds a published cluster (cluster.idx): use a new CLUSTER_DIR or remove that one"
    fi
}

# append the words of variable $1 (a bash array, or a string split on blanks) to CMD
add_words() {
    if [[ $(declare -p "$1" 2>/dev/null) == "declare -a"* ]]; then
        eval 'CMD+=("${'"$1"'[@]}")'
    elif [ -n "${!1:-}" ]; then
        local words
        read -r -a words <<< "${!1}"
        CMD+=("${words[@]}")
    fi
}

# what Hadoop reads (inputs, -files) is s3a:// on plain Hadoop; the jobs' own files stay s3://
hadoop_uri() { if [ "$RUNNER" = hadoop ]; then echo "${1/#s3:\/\//s3a://}"; else echo "$1"; fi; }

# append the CDX files that the sample and cluster jobs read to CMD
add_cdx_input() {
    if [ -n "${CDX_INPUT:-}" ]; then
        add_words CDX_INPUT
    elif [ "$RUNNER" = emr ] || [ "$RUNNER" = hadoop ]; then
        CMD+=("$(hadoop_uri "$CDX_DIR")")
    else
        # local and inline read local files: exactly the per-archive CDX files, as `build` does
        [ -d "$CDX_DIR" ] || fail_usage "CDX_DIR $CDX_DIR is not a local directory (the $RUNNER runner reads local files; set CDX_INPUT)"
        mapfile -t CDX_FILES < <(find "$CDX_DIR" -mindepth 1 -name '.*' -prune -o -type f -name '*.cdx.gz' -print | LC_ALL=C sort)
        [ ${#CDX_FILES[@]} -gt 0 ] || { echo "$PROG: no .cdx.gz files under $CDX_DIR" >&2; exit 1; }
        CMD+=("${CDX_FILES[@]}")
    fi
}

show_cmd() {  # the command, shell-quoted (a long input list cut short)
    local more=
    [ ${#CMD[@]} -le 24 ] || more=" ... ($((${#CMD[@]} - 24)) more arguments)"
    echo "$PROG: running:$(printf ' %q' "${CMD[@]:0:24}")$more" >&2
}

build_wheel() {  # emr: the package wheel that bootstrap.sh installs on every node
    export WEBARCHIVE_INDEXING_HOME=$REPO
    export WEBARCHIVE_INDEXING_WHEELS=${WHEEL_DIR:-$REPO/build/emr-wheels}
    [ "$RUNNER" = emr ] && [ "${BUILD_WHEEL:-1}" != 0 ] || return 0
    mkdir -p "$WEBARCHIVE_INDEXING_WHEELS"
    rm -f "$WEBARCHIVE_INDEXING_WHEELS"/webarchive_indexing-*.whl
    echo "$PROG: building the package wheel into $WEBARCHIVE_INDEXING_WHEELS" >&2
    # pure Python: a wheel with the compiled walker would be tied to this machine's platform
    # and Python, and to an ISA-L library the cluster's nodes may not have
    WEBARCHIVE_INDEXING_PURE=1 "${PYTHON:-python3}" -m pip wheel --quiet --no-deps --no-build-isolation \
        --wheel-dir "$WEBARCHIVE_INDEXING_WHEELS" "$REPO" >&2
}
