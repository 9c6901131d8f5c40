#!/usr/bin/env bash
# .ci/walkthrough.sh: runs the grpcurl walkthroughs of README.md and of the
# pages of docs/ as written, against the built binary, and checks each
# command's output.
#
# The pages are the script: README.md first, then docs/*.md in name order,
# all against one server (the README's first command: the embedded default,
# no --config), so a page may rely on that server and on nothing another
# page did (each deletes the sessions it made). Between <!-- walkthrough:begin --> and
# <!-- walkthrough:end -->, every ```sh block is grpcurl commands (a line
# may keep one's output in a shell variable for the next); the
# HTML comments just above it say what to check:
#   <!-- expect: TEXT -->      TEXT must appear in the command's output
#   <!-- expect-exit: N -->    the exit status (default 0; grpcurl exits
#                              64+code on an RPC error, e.g. 69 NotFound)
# The commands address 127.0.0.1:50051 as a reader's would; here the server
# listens on a free loopback port and the address is rewritten. The whole
# walkthrough runs twice against the same data file, because a reader may
# run it twice too.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readme_addr=127.0.0.1:50051
work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# grpcurl cannot be a go tool next to buf (TOOLCHAIN.md), so it is installed
# into the repo's .tmp/bin, pinned, whatever else is on PATH.
export GOBIN="$PWD/.tmp/bin"
export PATH="$GOBIN:$PATH"
go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4
# The README's tour pipes one answer through jq. Without Debian's jq, gojq
# (the same language, in Go) stands in, so that this step still needs only
# Go and git.
if ! command -v jq >/dev/null; then
  go install github.com/itchyny/gojq/cmd/gojq@v0.12.17
  jq() { gojq "$@"; }
fi

# Extract the steps.
pages=(README.md docs/*.md)
awk -v dir="$work" '
  FNR == 1 { on = 0; fence = 0; expects = ""; code = "" }
  /<!-- walkthrough:begin -->/ { on = 1; next }
  /<!-- walkthrough:end -->/   { on = 0; next }
  !on { next }
  fence && /^```/ { fence = 0; close(f); next }
  fence { print > f; next }
  /^<!-- expect: .* -->$/ {
    s = $0; sub(/^<!-- expect: /, "", s); sub(/ -->$/, "", s)
    expects = expects s "\n"; next
  }
  /^<!-- expect-exit: [0-9]+ -->$/ { code = $3; next }
  /^```sh$/ {
    n++; base = sprintf("%s/step%03d", dir, n); f = base ".sh"; fence = 1
    print FILENAME > (base ".page"); close(base ".page")
    printf "%s", expects > (base ".expect"); close(base ".expect")
    print (code == "" ? 0 : code) > (base ".exit"); close(base ".exit")
    expects = ""; code = ""
    next
  }
' "${pages[@]}"
steps=("$work"/step*.sh)
if [[ ! -e ${steps[0]} ]]; then
  echo "walkthrough: no steps found in ${pages[*]}" >&2
  exit 1
fi

# Start the server.
go build -o "$work/agentrunner" ./cmd/agentrunner
: >"$work/server.log" # exists before the first look below, whenever the job starts
AGENTRUNNER_CONFIG= AGENTRUNNER_HTTP_PREFIX= "$work/agentrunner" serve --addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --data "$work/agentrunner.db" 2>"$work/server.log" &
server_pid=$!
addr=
for _ in $(seq 300); do
  addr=$(sed -n 's/.*msg=serving addr=\([^ ]*\).*/\1/p' "$work/server.log")
  [[ -n $addr ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "walkthrough: server exited" >&2; exit 1; }
  sleep 0.1 # polling a child process's log for its first line
done
if [[ -z $addr ]]; then
  cat "$work/server.log" >&2
  echo "walkthrough: server did not log its address within 30s" >&2
  exit 1
fi

failed=0
for round in 1 2; do
  for s in "${steps[@]}"; do
    base=${s%.sh}
    cmd=$(<"$s")
    # A block is grpcurl commands, one a line; a line may keep what one
    # prints in a shell variable (NAME=$(grpcurl ... | grep ...)) for the
    # next, as a reader answering a call by its id would.
    while IFS= read -r line; do
      if [[ $line != grpcurl* && ! $line =~ ^[A-Z_]+=\$\(grpcurl\  ]]; then
        echo "walkthrough: $(basename "$s") ($(<"$base.page")): every line of a walkthrough block must be a grpcurl command, got: $line" >&2
        exit 1
      fi
    done <<<"$cmd"
    cmd=${cmd//$readme_addr/$addr}
    want_exit=$(<"$base.exit")
    set +e
    out=$(eval "$cmd" 2>&1)
    got_exit=$?
    set -e
    problems=()
    [[ $got_exit == "$want_exit" ]] || problems+=("exit status $got_exit, want $want_exit")
    while IFS= read -r want; do
      [[ -z $want || $out == *"$want"* ]] || problems+=("output lacks: $want")
    done <"$base.expect"
    if ((${#problems[@]})); then
      failed=1
      printf 'FAIL round %d %s (%s)\n$ %s\n%s\n' "$round" "$(basename "$s")" "$(<"$base.page")" "$cmd" "$out" >&2
      printf '  %s\n' "${problems[@]}" >&2
    else
      printf 'ok   round %d %s %s: %s\n' "$round" "$(basename "$s")" "$(<"$base.page")" "$(head -c 100 <<<"${cmd//$'\n'/ }")"
    fi
  done
done

# A graceful stop exits 0.
kill -TERM "$server_pid"
if ! wait "$server_pid"; then
  echo "walkthrough: server exited non-zero after SIGTERM" >&2
  failed=1
fi
server_pid=
if ((failed)); then
  echo "--- server log" >&2
  cat "$work/server.log" >&2
  exit 1
fi
echo "walkthrough: ${#steps[@]} commands of README.md and docs/ passed, twice"
