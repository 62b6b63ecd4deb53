# shellcheck shell=bash
# Sourced by fetch.sh, bin/hadoop and pseudo-cluster.sh: the Hadoop version (pom.xml's)
# and where its jars are kept.
HADOOP_LOCAL_VERSION=$(sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' "$(dirname "${BASH_SOURCE[0]}")/pom.xml")
HADOOP_LOCAL_HOME=${HADOOP_LOCAL_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/webarchive-indexing/hadoop-$HADOOP_LOCAL_VERSION}
