#!/usr/bin/env bash
# .ci/runs-demo.sh: runs the demonstration of docs/runs.md ("Watching runs
# happen", or the file given as $1) as written, and checks each block.
#
# Between <!-- runs-demo:begin --> and <!-- runs-demo:end -->, every ```sh
# block is run in order in one bash shell, so that a block may use the
# variables of one before it (SERVER, the server's pid). The HTML comments
# just above a block say what to check in its output (stdout and stderr):
#   <!-- expect: TEXT -->      TEXT must appear
#   <!-- expect-not: TEXT -->  TEXT must not appear
#   <!-- expect-exit: N -->    the block's exit status (default 0)
# The commands address 127.0.0.1:50051 and 127.0.0.1:8080 (the gRPC port
# and the HTTP listener) as a reader's would; here they are rewritten to
# free loopback ports, AGENTRUNNER_ADDR points the `agentrunner runs`
# commands at the first and AGENTRUNNER_HTTP_ADDR puts the HTTP listener
# on the second, not on 8080, which may be taken. They run in a temporary
# directory with
# the built binary and grpcurl first on the PATH, and the whole demo must
# end within $RUNS_DEMO_TIMEOUT seconds (default 300). RUNS_DEMO_VERBOSE=1
# prints every block's output.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
doc=${1:-docs/runs.md}
readme_addr=127.0.0.1:50051
readme_http=127.0.0.1:8080

work=$(mktemp -d)
demo_pid=
cleanup() {
  # The demo runs in its own process group, with the servers it started:
  # kill what a failed or timed-out block left running.
  if [[ -n $demo_pid ]]; then kill -KILL -- "-$demo_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

export GOBIN="$PWD/.tmp/bin"
go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4
mkdir -p "$work/bin"
go build -o "$work/bin/agentrunner" ./cmd/agentrunner
cp "$GOBIN/grpcurl" "$work/bin/"

# Free ports: the kernel picks them, and they are closed again for the
# server.
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
addr=127.0.0.1:$(free_port)
http_addr=127.0.0.1:$(free_port)
while [[ $http_addr == "$addr" ]]; do http_addr=127.0.0.1:$(free_port); done

# Extract the blocks and their checks into one script.
awk -v dir="$work" '
  /<!-- runs-demo:begin -->/ { on = 1; next }
  /<!-- runs-demo:end -->/   { on = 0; next }
  !on { next }
  fence && /^```/ { fence = 0; close(f); next }
  fence { print > f; next }
  /^<!-- expect: .* -->$/ { s = $0; sub(/^<!-- expect: /, "", s); sub(/ -->$/, "", s); chk = chk "+" s "\n"; next }
  /^<!-- expect-not: .* -->$/ { s = $0; sub(/^<!-- expect-not: /, "", s); sub(/ -->$/, "", s); chk = chk "-" s "\n"; next }
  /^<!-- expect-exit: [0-9]+ -->$/ { code = $3; next }
  /^```sh$/ {
    n++; base = sprintf("%s/step%02d", dir, n); f = base ".sh"; fence = 1
    printf "%s", chk > (base ".expect"); close(base ".expect")
    print (code == "" ? 0 : code) > (base ".exit"); close(base ".exit")
    chk = ""; code = ""
    next
  }
' "$doc"
steps=("$work"/step*.sh)
if [[ ! -e ${steps[0]} ]]; then
  echo "runs-demo: no steps found in $doc" >&2
  exit 1
fi
for s in "${steps[@]}"; do
  sed -i "s/$readme_addr/$addr/g; s/$readme_http/$http_addr/g" "$s"
done

# The runner: each block in this shell (its variables stay), its output in
# a file, then the checks. It runs in the work directory, where the demo's
# data file and logs go.
cat >"$work/run.sh" <<'RUNNER'
set -uo pipefail
failed=0
for s in "$@"; do
  base=${s%.sh}
  # The demo's server must not keep the block's output file open: its
  # stdout goes where the block's does, so the block is read when it ends.
  source "$s" >"$base.out" 2>&1 </dev/null
  got=$?
  out=$(<"$base.out")
  problems=()
  [[ $got == "$(<"$base.exit")" ]] || problems+=("exit status $got, want $(<"$base.exit")")
  while IFS= read -r want; do
    case $want in
    +*) [[ $out == *"${want:1}"* ]] || problems+=("output lacks: ${want:1}") ;;
    -*) [[ $out != *"${want:1}"* ]] || problems+=("output has: ${want:1}") ;;
    esac
  done <"$base.expect"
  if ((${#problems[@]})); then
    failed=1
    printf 'FAIL %s\n%s\n--- output\n%s\n' "$(basename "$s")" "$(<"$s")" "$out" >&2
    printf '  %s\n' "${problems[@]}" >&2
  else
    printf 'ok   %s: %s\n' "$(basename "$s")" "$(head -c 100 <"$s" | tr '\n' ' ')"
    [[ -z ${RUNS_DEMO_VERBOSE:-} ]] || printf '%s\n' "$out"
  fi
done
exit $failed
RUNNER

cd "$work"
status=0
# setsid: a process group of its own, which cleanup can kill whole.
setsid env -u GOOGLE_API_KEY -u GEMINI_API_KEY -u GOOGLE_GENAI_USE_VERTEXAI -u GOOGLE_GENAI_USE_ENTERPRISE \
  -u AGENTRUNNER_CONFIG -u AGENTRUNNER_DATA -u AGENTRUNNER_AUTH_FILE -u AGENTRUNNER_HTTP_PREFIX \
  AGENTRUNNER_ADDR="$addr" AGENTRUNNER_HTTP_ADDR="$http_addr" PATH="$work/bin:$PATH" \
  timeout "${RUNS_DEMO_TIMEOUT:-300}" bash run.sh "${steps[@]}" &
demo_pid=$!
wait "$demo_pid" || status=$?
if ((status)); then
  ((status == 124)) && echo "runs-demo: did not finish within ${RUNS_DEMO_TIMEOUT:-300}s" >&2
  echo "--- server log" >&2
  cat runs-demo.log >&2 2>/dev/null || true
  exit 1
fi
echo "runs-demo: ${#steps[@]} blocks passed"
