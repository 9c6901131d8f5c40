#!/usr/bin/env bash
# .ci/embed.sh: runs the Go embedder example of the README (examples/embed:
# a custom agent, a Go function tool and a plugin, served over gRPC) and
# drives it with the Go client example, checking every line that came back:
# the tool call and its result, the plugin's before_run refusal, and the
# custom agent's transfer. Then SIGTERM must stop it cleanly (exit 0).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source .ci/lib.sh
trap stop_servers EXIT

go build -o "$ci_work/embed" ./examples/embed
go build -o "$ci_work/example-go" ./examples/go
: >"$ci_work/embed.log" # exists before the first look below, whenever the job starts
"$ci_work/embed" -addr 127.0.0.1:0 -data "$ci_work/embed.db" 2>"$ci_work/embed.log" &
pid=$!
ci_server_pids+=("$pid")
addr=
for _ in $(seq 300); do
  addr=$(sed -n 's/.*msg=serving addr=\([^ ]*\).*/\1/p' "$ci_work/embed.log")
  [[ -n $addr ]] && break
  kill -0 "$pid" 2>/dev/null || { cat "$ci_work/embed.log" >&2; echo "embed exited before serving" >&2; exit 1; }
  sleep 0.1 # polling a child's log for its first line
done
[[ -n $addr ]] || { cat "$ci_work/embed.log" >&2; echo "embed logged no address within 30s" >&2; exit 1; }

out=$("$ci_work/example-go" -addr "$addr" -app shop "how many words are in this message" "my password is x" "hello" | sed 1d)
echo "$out" | sed 's/^/  | /'
want='#2 front: Welcome! The clerk will help you. -> transfer to clerk
#3 clerk: calls word_count
#4 clerk: word_count returned
#5 clerk: That is 7 words.
#7 front: I cannot help with passwords.
#9 front: Welcome! The clerk will help you. -> transfer to clerk
#10 clerk: You said: hello
artifacts: []
stored events: 10; answered by: front, front, front'
if [[ $out != "$want" ]]; then
  echo "embed: unexpected output; want:" >&2
  echo "$want" >&2
  exit 1
fi
kill -TERM "$pid"
if ! wait "$pid"; then
  cat "$ci_work/embed.log" >&2
  echo "embed exited non-zero after SIGTERM" >&2
  exit 1
fi
echo "embed: custom agent, function tool and plugin served and answered as expected"
