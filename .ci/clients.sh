#!/usr/bin/env bash
# .ci/clients.sh: runs the example clients (Python, TypeScript, Go) and
# `agentrunner sessions` against the real server and checks what came back,
# so that a broken stub, example or server fails CI.
#
# Needs what `bash .ci/run clients-setup` installs: Debian's python3-grpcio
# and python3-protobuf, and node_modules (npm ci).
#
# For each client:
#   - demo app (custom and workflow agents, two messages): the agents that
#     answered, in order, with their sequence numbers, and the stored event
#     count, cross-checked with `agentrunner sessions show`;
#   - support app (LLM agents on the offline model): the answer streams as
#     partial text, triage transfers to billing, and the second message is
#     answered by billing directly;
#   - failures: an unknown app is a NotFound RPC error (non-zero exit), an
#     agent's error arrives in band (a server whose Gemini endpoint is
#     unreachable) and the run goes on, and no server at all is Unavailable.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source .ci/lib.sh
trap stop_servers EXIT

if ! /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || [[ ! -x node_modules/.bin/tsx ]]; then
  echo "clients: missing python3-grpcio/python3-protobuf or node_modules; run: bash .ci/run clients-setup" >&2
  exit 1
fi

build_agentrunner
go build -o "$ci_work/example-go" ./examples/go
start_server main
addr=$server_addr
main_pid=$server_pid
# A server whose LLM agents call a Gemini endpoint that refuses connections:
# every run of the support app fails in band.
start_server broken GEMINI_API_KEY=fake-key GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:1
broken_addr=$server_addr
broken_pid=$server_pid

langs=(python ts go)

# client LANG ARGS...: runs that language's example with the same arguments.
client() {
  local lang=$1
  shift
  case $lang in
  python) /usr/bin/python3 examples/python/client.py "$@" ;;
  ts) node_modules/.bin/tsx examples/ts/client.ts "$@" ;;
  go) "$ci_work/example-go" "$@" ;;
  esac
}

# run_client NAME LANG ARGS...: runs a client, keeping its stdout in out,
# its stderr in err and its exit status in rc, and shows them in the log.
run_client() {
  local name=$1
  shift
  set +e
  client "$@" >"$ci_work/out" 2>"$ci_work/err"
  rc=$?
  set -e
  out=$(<"$ci_work/out")
  err=$(<"$ci_work/err")
  echo "--- $name (exit $rc)"
  sed 's/^/  | /' "$ci_work/out"
  [[ -z $err ]] || sed 's/^/  ! /' "$ci_work/err"
}

ar() { "$ci_bin" "$@"; }

# The demo app's run, as "#sequence author" lines: greeter transfers to the
# pipeline, whose parallel branches (words, letters) may finish in either
# order, so both are written "analysis" here.
demo_run() {
  local s=$1
  printf '#%d %s\n' $((s)) greeter $((s + 1)) echo $((s + 2)) analysis $((s + 3)) analysis \
    $((s + 4)) tick $((s + 5)) tick $((s + 6)) tick $((s + 7)) tick $((s + 8)) summary
}
want_demo=$(demo_run 2; demo_run 12) # #1 and #11 are the user's messages

for lang in "${langs[@]}"; do
  user=ci-$lang

  # The demo app, two messages.
  run_client "$lang demo" "$lang" --addr "$addr" --app demo --user "$user"
  what="$lang demo"
  ((rc == 0)) || fail "$what: exit status $rc"
  session=$(sed -n 's/^session \([0-9a-f]\{32\}\)$/\1/p' <<<"$out")
  [[ -n $session ]] || fail "$what: no 'session <id>' line"
  got=$(grep -E '^#[0-9]+ [a-z]+: ' <<<"$out" | sed -E 's/^(#[0-9]+ [a-z]+):.*/\1/; s/ (words|letters)$/ analysis/' || true)
  [[ $got == "$want_demo" ]] || fail "$what: complete events (sequence, author) are
$got
want
$want_demo"
  [[ $(grep -cE "^#[0-9]+ words: " <<<"$out") == 2 && $(grep -cE "^#[0-9]+ letters: " <<<"$out") == 2 ]] ||
    fail "$what: want one words and one letters event per run"
  expect_match "$what" "$out" '^#2 greeter: Hello ci-[a-z]+! This is turn 1 of this session .* -> transfer to pipeline$'
  expect_contains "$what" "$out" '#3 echo: You said: "Hello! What can you do?"'
  expect_contains "$what" "$out" '#10 summary: Summary: 5 words, 17 letters, turn 1.'
  expect_contains "$what" "$out" '#20 summary: Summary: 3 words, 10 letters, turn 2.'
  expect_contains "$what" "$out" 'artifacts: []'
  expect_match "$what" "$out" '^stored events: 20; answered by: greeter, greeter$'

  # What the client says was stored is what the server shows.
  if [[ -n $session ]]; then
    show=$(ar sessions show --addr "$addr" --app demo --user "$user" --events 0 "$session") || fail "$what: sessions show failed"
    expect_match "$what: sessions show" "$show" "^session $session  app demo  user $user  events 20  updated "
    [[ $(grep -cE '^#[0-9]+ ' <<<"$show") == 20 ]] || fail "$what: sessions show prints $(grep -cE '^#[0-9]+ ' <<<"$show") events, the client counted 20:
$show"
    expect_match "$what: sessions show" "$show" '^#1 you> Hello! What can you do\?$'
    expect_match "$what: sessions show" "$show" '^#11 you> Tell me more\.$'
    expect_match "$what: sessions show" "$show" '^#20 \[summary\] Summary: 3 words, 10 letters, turn 2\.$'
    expect_match "$what: sessions show" "$show" '^  => greeter transfers to pipeline$'
    list=$(ar sessions list --addr "$addr" --app demo --user "$user") || fail "$what: sessions list failed"
    expect_match "$what: sessions list" "$list" "^$user +$session +20  "
  fi

  # The support app: streamed text, a transfer, then the agent that
  # answered last answers the next message.
  run_client "$lang support" "$lang" --addr "$addr" --app support --user "$user" "I have a billing question" "and another one"
  what="$lang support"
  ((rc == 0)) || fail "$what: exit status $rc"
  expect_match "$what" "$out" '^#2 triage: calls transfer_to_agent$'
  expect_match "$what" "$out" '^#3 triage: transfer_to_agent returned -> transfer to billing$'
  expect_match "$what" "$out" '^billing \(streaming\): offline model: you said: I have a billing question$'
  expect_match "$what" "$out" '^#4 billing: offline model: you said: I have a billing question$'
  expect_match "$what" "$out" '^billing \(streaming\): offline model: you said: and another one$'
  expect_match "$what" "$out" '^#6 billing: offline model: you said: and another one$'
  expect_match "$what" "$out" '^stored events: 6; answered by: triage, billing$'

  # An app the server does not host: a failed RPC, said clearly.
  run_client "$lang unknown app" "$lang" --addr "$addr" --app nope --user "$user"
  what="$lang unknown app"
  ((rc != 0)) || fail "$what: exit status 0"
  expect_match "$what" "$err" '^RPC failed: (NotFound|NOT_FOUND): app "nope" is not served here'
  [[ $out != *"stored events"* ]] || fail "$what: went on after the failure"

  # A model that cannot be reached: retried, then the failure arrives in
  # band as a stored event with a stable code (UNAVAILABLE), never
  # Unknown, and the run ends normally.
  run_client "$lang agent error" "$lang" --addr "$broken_addr" --app support --user "$user" "hello?"
  what="$lang agent error"
  ((rc == 0)) || fail "$what: exit status $rc"
  expect_match "$what" "$out" '^#2 triage: \[UNAVAILABLE\] .*connection refused'
  expect_match "$what" "$out" '^stored events: 2; answered by: triage$'

  # No server at all.
  run_client "$lang no server" "$lang" --addr 127.0.0.1:1 --app demo --user "$user"
  what="$lang no server"
  ((rc != 0)) || fail "$what: exit status 0"
  expect_match "$what" "$err" '^RPC failed: (Unavailable|UNAVAILABLE): '
done

# Tools the client executes (the orders app's get_order): the Python and
# TypeScript examples answer the model's calls in a loop until the run
# waits on nothing. Arguments the schema refuses are answered at once.
tools_client() {
  case $1 in
  python) /usr/bin/python3 examples/python/tools.py "${@:2}" ;;
  ts) node_modules/.bin/tsx examples/ts/tools.ts "${@:2}" ;;
  esac
}
for lang in python ts; do
  what="$lang tools"
  set +e
  out=$(tools_client "$lang" --addr "$addr" --user "ci-$lang-tools" 'where is it? call get_order {"order_id": "42"}' 'call get_order {"order_id": "x"}' 2>"$ci_work/err")
  rc=$?
  set -e
  echo "--- $what (exit $rc)"
  sed 's/^/  | /' <<<"$out"
  ((rc == 0)) || fail "$what: exit status $rc: $(<"$ci_work/err")"
  expect_match "$what" "$out" '^#2 clerk: calls get_order .*order_id.?: ?.42.* \(waits for us\)$'
  expect_match "$what" "$out" '^  \(client ran get_order -> .*shipped.*\)$'
  expect_contains "$what" "$out" '#4 clerk: offline model: get_order returned {"carrier":"DHL","status":"shipped"}'
  expect_match "$what" "$out" '^#7 clerk: get_order returned .*invalid arguments for get_order: .*does not match'
  [[ $(grep -c 'waits for us' <<<"$out") == 1 ]] || fail "$what: the invalid call must not wait for the client"
done

# sessions list|show|delete: delete the Python client's demo session and
# check it is gone everywhere, and that what is not there is NotFound.
echo "--- agentrunner sessions"
python_session=$(ar sessions list --addr "$addr" --app demo --user ci-python | awk 'NR == 2 { print $2 }')
list_all=$(ar sessions list --addr "$addr" --app demo --user "")
echo "$list_all" | sed 's/^/  | /'
[[ $(grep -cE '^ci-(python|ts|go) +[0-9a-f]{32} +20  ' <<<"$list_all") == 3 ]] || fail "sessions list of every user: want the three demo sessions with 20 events"
if [[ -n $python_session ]]; then
  deleted=$(ar sessions delete --addr "$addr" --app demo --user ci-python "$python_session") || fail "sessions delete failed"
  [[ $deleted == "deleted session $python_session" ]] || fail "sessions delete printed: $deleted"
  for cmd in show delete; do
    set +e
    msg=$(ar sessions "$cmd" --addr "$addr" --app demo --user ci-python "$python_session" 2>&1)
    code=$?
    set -e
    echo "  \$ agentrunner sessions $cmd <deleted>  # exit $code: $msg"
    ((code == 1)) || fail "sessions $cmd of a deleted session: exit status $code, want 1"
    [[ $msg == "agentrunner: NotFound: session demo/ci-python/$python_session: not found" ]] ||
      fail "sessions $cmd of a deleted session printed: $msg"
  done
  after=$(ar sessions list --addr "$addr" --app demo --user "")
  [[ $after != *"$python_session"* ]] || fail "sessions list still shows the deleted session"
  [[ $(grep -c ' 20  ' <<<"$after") == 2 ]] || fail "sessions list after delete: want the other two sessions"
else
  fail "sessions list --user ci-python shows no session"
fi

stop_server "$main_pid" || fail "server did not stop cleanly"
stop_server "$broken_pid" || fail "the broken server did not stop cleanly"
if ((ci_failed)); then
  echo "--- server log" >&2
  cat "$ci_work/main.log" >&2
  exit 1
fi
echo "clients: Python, TypeScript and Go examples and agentrunner sessions passed"
