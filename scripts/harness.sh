# Sourced by scripts/test.sh and scripts/tsan.sh, with $build set to a build folder holding
# `tessera`: starts, on free loopback ports in a fresh temporary directory, a redis-server, a
# `tessera agent` on the fake GPU node tests/agent/fake_node.yaml publishing to that Redis, and a
# prometheus scraping the agent every second, and exports their addresses as the TESSERA_TEST_*
# variables the integration tests read. Everything started here is stopped on exit, also on
# failure. Defines harness_logs, which prints the servers' last log lines.
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/tessera-test.XXXXXX")
pids=()
stop_servers() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$run_dir"
}
trap stop_servers EXIT
trap 'exit 130' INT TERM

# A loopback port nobody answers on (bash only: a fresh Debian has no python3), in 20000–31999:
# below the kernel's ephemeral range (32768–60999), where the tests' outgoing connections take
# their local ports and could hold one picked there by the time a server binds it.
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}
# Succeeds when GET http://127.0.0.1:$1$2 answers 200.
http_ok() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3 &&
    head -1 <&3 | grep -q ' 200') 2>/dev/null
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# wait_until NAME LOG CHECK...: up to 30 s for CHECK to succeed.
wait_until() {
  local name=$1 log=$2
  shift 2
  for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done
  echo "test.sh: $name did not come up; its log:" >&2
  tail -20 "$log" >&2 || true
  return 1
}

redis_bin=$(command -v redis-server || true)
prometheus_bin=$(command -v prometheus || true)
if [ -z "$redis_bin" ] || [ -z "$prometheus_bin" ]; then
  echo "test.sh: redis-server and prometheus are needed for the integration tests;" \
    "run scripts/deps.sh" >&2
  exit 1
fi

redis_port=$(free_port)
mkdir -p "$run_dir/redis"
"$redis_bin" --port "$redis_port" --bind 127.0.0.1 --dir "$run_dir/redis" --save "" \
  --appendonly no --daemonize no --logfile "$run_dir/redis.log" &
pids+=($!)
wait_until redis-server "$run_dir/redis.log" port_open "$redis_port"

agent_port=$(free_port)
"$build/tessera" agent --fake tests/agent/fake_node.yaml --listen "127.0.0.1:$agent_port" \
  --interval 0.25 --store redis --redis "127.0.0.1:$redis_port" --redis-prefix tessera-harness: \
  >"$run_dir/agent.log" 2>&1 &
pids+=($!)
# /readyz: the inventory is in Redis before any test reads it.
wait_until "tessera agent" "$run_dir/agent.log" http_ok "$agent_port" /readyz

# The tests' own series (per-pod Triton counters, scripted DCGM series): files they write in
# $TESSERA_TEST_EXPORTER_DIR, served by tests/tools/metrics_file_exporter.cc.
exporter_port=$(free_port)
mkdir -p "$run_dir/exporter"
"$build/tests/metrics_file_exporter" --dir "$run_dir/exporter" --port "$exporter_port" \
  >"$run_dir/exporter.log" 2>&1 &
pids+=($!)
wait_until metrics_file_exporter "$run_dir/exporter.log" http_ok "$exporter_port" /ready

prometheus_port=$(free_port)
cat >"$run_dir/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: tessera-agent
    static_configs:
      - targets: ['127.0.0.1:$agent_port']
  - job_name: tests
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:$exporter_port']
YAML
"$prometheus_bin" --config.file="$run_dir/prometheus.yml" --storage.tsdb.path="$run_dir/tsdb" \
  --web.listen-address="127.0.0.1:$prometheus_port" --log.level=warn \
  >"$run_dir/prometheus.log" 2>&1 &
pids+=($!)
wait_until prometheus "$run_dir/prometheus.log" http_ok "$prometheus_port" /-/ready

export TESSERA_TEST_REDIS="127.0.0.1:$redis_port"
export TESSERA_TEST_REDIS_SERVER="$redis_bin"
export TESSERA_TEST_PROMETHEUS="http://127.0.0.1:$prometheus_port"
export TESSERA_TEST_SCRAPE_INTERVAL=1
export TESSERA_TEST_EXPORTER_DIR="$run_dir/exporter"
export TESSERA_TEST_AGENT="127.0.0.1:$agent_port"
export TESSERA_TEST_AGENT_NODE=fake-node-1
export TESSERA_TEST_AGENT_PREFIX=tessera-harness:
export TESSERA_TEST_TESSERA_BIN="$PWD/$build/tessera"
# Tests on ../shared/data fail instead of skipping when it is missing (tests/shared_data.h).
export TESSERA_REQUIRE_DATA=1
# Integration tests fail instead of skipping when an address is missing (tests/harness_env.h).
export TESSERA_REQUIRE_HARNESS=1


harness_logs() {
  for log in agent exporter prometheus redis; do
    echo "--- $log log (last lines) ---" >&2
    tail -15 "$run_dir/$log.log" >&2 || true
  done
}
