# .ci/lib.sh: helpers shared by .ci/clients.sh and .ci/chat.sh (sourced, not
# run). They start `agentrunner serve` on a free loopback port with a
# temporary data file and stop it again; the caller's EXIT trap calls
# stop_servers.

# ci_work is the temporary directory of this run; ci_bin the built binary.
ci_work=$(mktemp -d)
ci_bin=$ci_work/agentrunner
ci_server_pids=()

build_agentrunner() {
  go build -o "$ci_bin" ./cmd/agentrunner
}

# start_server NAME [VAR=value ...] [-- SERVE_FLAG ...]: starts a server
# whose log is $ci_work/NAME.log, with the given environment on top of one
# without Gemini credentials or an apps file (so it serves the demo app and
# the offline support app) and the given serve flags, waits until it reports
# SERVING on the standard health service (over TLS, trusting the CA file
# $server_ca, when that is set), and sets server_addr and server_pid.
start_server() {
  local name=$1
  shift
  local envs=() flags=()
  while (($#)); do
    if [[ $1 == -- ]]; then
      shift
      flags=("$@")
      break
    fi
    envs+=("$1")
    shift
  done
  local log=$ci_work/$name.log
  # Created here: the background job's redirection may come after the
  # first look at the log below.
  : >"$log"
  env -u GOOGLE_API_KEY -u GEMINI_API_KEY -u GOOGLE_GENAI_USE_VERTEXAI -u GOOGLE_GENAI_USE_ENTERPRISE \
    -u GOOGLE_GEMINI_BASE_URL -u AGENTRUNNER_CONFIG -u AGENTRUNNER_ADDR -u AGENTRUNNER_DATA -u AGENTRUNNER_AUTH_FILE -u AGENTRUNNER_HTTP_PREFIX "${envs[@]}" \
    "$ci_bin" serve --addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --data "$ci_work/$name.db" "${flags[@]}" 2>"$log" &
  server_pid=$!
  ci_server_pids+=("$server_pid")
  server_addr=
  local i
  # Port 0 lets the kernel pick a free port; the server logs the one it got.
  for i in $(seq 300); do
    server_addr=$(sed -n 's/.*msg=serving addr=\([^ ]*\).*/\1/p' "$log")
    [[ -n $server_addr ]] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
      cat "$log" >&2
      echo "server $name exited before serving" >&2
      return 1
    fi
    sleep 0.1 # polling a child's log for its first line
  done
  if [[ -z $server_addr ]]; then
    cat "$log" >&2
    echo "server $name logged no address within 30s" >&2
    return 1
  fi
  for i in $(seq 100); do
    if /usr/bin/python3 .ci/health.py "$server_addr" ${server_ca:+"$server_ca"} 2>"$ci_work/health.err"; then
      echo "server $name: SERVING on $server_addr (log $log)"
      return 0
    fi
    sleep 0.1 # polling the health service
  done
  cat "$log" "$ci_work/health.err" >&2
  echo "server $name at $server_addr was not SERVING within 10s" >&2
  return 1
}

# stop_server PID: SIGTERM, and the graceful stop must exit 0.
stop_server() {
  local pid=$1
  kill -TERM "$pid"
  if ! wait "$pid"; then
    echo "server $pid exited non-zero after SIGTERM" >&2
    return 1
  fi
}

# stop_servers kills whatever is still running and removes ci_work: for the
# EXIT trap.
stop_servers() {
  local pid
  for pid in "${ci_server_pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$ci_work" 2>/dev/null || { sleep 0.5 && rm -rf "$ci_work"; } || echo "could not remove $ci_work" >&2
}

# fail MESSAGE...: reports a failed check and remembers it.
ci_failed=0
fail() {
  ci_failed=1
  printf 'FAIL: %s\n' "$*" >&2
}

# expect_contains WHAT TEXT WANT: a failed check unless TEXT contains WANT.
# Like fail, the expect_ functions return 0, so that one run reports every
# failed check; the script exits 1 at the end when ci_failed is set.
expect_contains() {
  if [[ $2 != *"$3"* ]]; then
    fail "$1 lacks: $3"
  fi
}

# expect_match WHAT TEXT REGEX: a failed check unless a line of TEXT matches the
# extended regular expression.
expect_match() {
  if ! grep -qE -- "$3" <<<"$2"; then
    fail "$1 has no line matching: $3"
  fi
}
