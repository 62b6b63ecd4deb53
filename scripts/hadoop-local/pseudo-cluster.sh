#!/usr/bin/env bash
# A pseudo-distributed Hadoop on this machine: HDFS (a NameNode and a DataNode) and YARN
# (a ResourceManager, a NodeManager, the MapReduce JobHistoryServer), started in one JVM
# by Hadoop's own MiniHadoopClusterManager from the jars of fetch.sh, every service on
# 127.0.0.1, kept small (task containers of 256 MB). Runs until stopped (SIGTERM, Ctrl-C).
#
#   pseudo-cluster.sh DIR [-D property=value ...]
#
# DIR holds the cluster's data and DIR/conf, a HADOOP_CONF_DIR for clients
# (`HADOOP_CONF_DIR=DIR/conf hadoop fs -ls /`), and DIR/logs, its HADOOP_LOG_DIR (the
# tasks' logs in DIR/logs/userlogs); DIR/conf/ready appears once it is up.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=home.sh
source "$HERE/home.sh"
[ $# -ge 1 ] && [ "${1#-}" = "$1" ] || { sed -n '2,10s/^# \{0,1\}//p' "$0" >&2; exit 2; }
DIR=$(mkdir -p "$1" && cd "$1" && pwd)
shift
rm -rf "$DIR/conf"
mkdir -p "$DIR/conf" "$DIR/logs"

# The ports clients and containers must know are chosen here (free now on 127.0.0.1) and
# fixed, since the configuration the manager writes (-writeConfig) is not the one its YARN
# runs with; the other services take any free port.
read -r NN RM SCHED TRACKER ADMIN JHS < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')

# Hadoop 3.4 on Java 17: the MapReduce application master and tasks reflect into these
OPENS=""
for package in java.lang java.lang.reflect java.io java.net java.nio java.util \
               java.util.concurrent sun.nio.ch; do
    OPENS+=" --add-opens=java.base/$package=ALL-UNNAMED"
done

# A task's PATH is not the NodeManager's: as on a node where Hadoop is installed, tasks
# find `hadoop` (the jobs' storage runs `hadoop fs`) on it, with these jars
TASK_ENV="PATH=$HERE/bin:/usr/local/bin:/usr/bin:/bin,HADOOP_LOCAL_HOME=$HADOOP_LOCAL_HOME"

property() { printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$2"; }
site() {  # site FILE NAME VALUE ...: a Hadoop configuration file in DIR/conf
    local file=$DIR/conf/$1
    shift
    { echo '<?xml version="1.0"?>'; echo '<configuration>'
      while [ $# -gt 0 ]; do property "$1" "$2"; shift 2; done
      echo '</configuration>'; } > "$file.tmp"
    mv "$file.tmp" "$file"
}
# what clients and the containers read (the containers' classpath starts with DIR/conf)
site core-site.xml fs.defaultFS "hdfs://127.0.0.1:$NN" hadoop.tmp.dir "$DIR/tmp"
site yarn-site.xml \
    yarn.resourcemanager.address "127.0.0.1:$RM" \
    yarn.resourcemanager.scheduler.address "127.0.0.1:$SCHED" \
    yarn.resourcemanager.resource-tracker.address "127.0.0.1:$TRACKER" \
    yarn.resourcemanager.admin.address "127.0.0.1:$ADMIN" \
    yarn.resourcemanager.webapp.address 127.0.0.1:0 \
    yarn.nodemanager.address 127.0.0.1:0 yarn.nodemanager.localizer.address 127.0.0.1:0 \
    yarn.nodemanager.webapp.address 127.0.0.1:0 yarn.nodemanager.hostname 127.0.0.1 \
    yarn.nodemanager.resource.memory-mb 4096 yarn.nodemanager.resource.cpu-vcores 8 \
    yarn.scheduler.minimum-allocation-mb 128 yarn.nodemanager.vmem-check-enabled false \
    yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage 99.5 \
    yarn.minicluster.fixed.ports true
site mapred-site.xml \
    mapreduce.framework.name yarn \
    mapreduce.jobhistory.address "127.0.0.1:$JHS" \
    mapreduce.jobhistory.admin.address 127.0.0.1:0 mapreduce.jobhistory.webapp.address 127.0.0.1:0 \
    mapreduce.shuffle.port 0 \
    mapreduce.application.classpath "$DIR/conf,$HERE/conf,$HADOOP_LOCAL_HOME/lib/*" \
    yarn.app.mapreduce.am.staging-dir /tmp/hadoop-yarn/staging \
    yarn.app.mapreduce.am.resource.mb 512 yarn.app.mapreduce.am.command-opts "-Xmx384m$OPENS" \
    mapreduce.map.memory.mb 256 mapreduce.reduce.memory.mb 256 \
    mapreduce.map.java.opts "-Xmx192m$OPENS" mapreduce.reduce.java.opts "-Xmx192m$OPENS" \
    mapreduce.map.env "$TASK_ENV" mapreduce.reduce.env "$TASK_ENV"
site hdfs-site.xml \
    dfs.replication 1 dfs.namenode.http-address 127.0.0.1:0 \
    dfs.datanode.address 127.0.0.1:0 dfs.datanode.http.address 127.0.0.1:0 \
    dfs.datanode.ipc.address 127.0.0.1:0 dfs.permissions.enabled false

# the mini clusters keep their data under the working directory
cd "$DIR"
export HADOOP_CONF_DIR=$DIR/conf HADOOP_LOG_DIR=$DIR/logs HADOOP_HEAPSIZE_MAX=${HADOOP_HEAPSIZE_MAX:-1g}
"$HERE/bin/hadoop" org.apache.hadoop.mapreduce.MiniHadoopClusterManager \
    -format -datanodes 1 -nodemanagers 1 -nnport "$NN" -rmport "$RM" -jhsport "$JHS" \
    -writeDetails "$DIR/details.json" "$@" &
MANAGER=$!
trap 'kill $MANAGER 2>/dev/null; wait $MANAGER' TERM INT
# up once it wrote its details (after starting every service)
while [ ! -s "$DIR/details.json" ]; do
    kill -0 $MANAGER 2>/dev/null || { wait $MANAGER; exit 1; }
    sleep 1
done
# A task's logs where a node keeps them, HADOOP_LOG_DIR/userlogs/APP/CONTAINER (mrjob
# reads a failed task's stderr there to say why it failed): the mini cluster names its
# NodeManager's log directories itself, under target/; before any container runs, each
# becomes a link to DIR/logs/userlogs
mkdir -p "$DIR/logs/userlogs"
while read -r logdir; do
    rmdir "$logdir" && ln -s "$DIR/logs/userlogs" "$logdir"
done < <(find "$DIR/target" -type d -name '*-logDir-nm-*' -prune)
touch "$DIR/conf/ready"
echo "pseudo-cluster.sh: up: HADOOP_CONF_DIR=$DIR/conf (hdfs://127.0.0.1:$NN, YARN 127.0.0.1:$RM)" >&2
wait $MANAGER
