#!/usr/bin/env bash
# .ci/chat.sh: drives `agentrunner chat` in a real terminal (tmux) against
# the real server, the way a person would: type a message, read the screen.
#
#   1. a new session of the support app (offline model): triage's transfer
#      is shown, then billing's answer under its name; /quit exits 0;
#   2. a new client with --session: it shows the stored history, the next
#      answer continues the session's sequence numbers (#5-#6), and Ctrl-D
#      exits 0; `agentrunner sessions show` agrees;
#   3. an app the server does not host: a NotFound message naming the apps
#      there are, and exit status 1.
#
# Needs tmux and Debian's python3-grpcio (for the health check); `bash
# .ci/run clients-setup` installs both. tmux runs on its own socket in a
# temporary directory, so no other tmux server is touched.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source .ci/lib.sh

if ! command -v tmux >/dev/null || ! /usr/bin/python3 -c 'import grpc' 2>/dev/null; then
  echo "chat: missing tmux or python3-grpcio; run: bash .ci/run clients-setup" >&2
  exit 1
fi

sock=$ci_work/tmux.sock
tm() { tmux -S "$sock" "$@"; }
cleanup() {
  local i
  tm kill-server 2>/dev/null || true
  for i in $(seq 50); do # the shells in the terminals end on SIGHUP
    tm has-session 2>/dev/null || break
    sleep 0.1
  done
  stop_servers
}
trap cleanup EXIT

build_agentrunner
start_server chat
addr=$server_addr

# open_terminal NAME: a 200x50 terminal running a plain bash, in which the
# test types commands.
open_terminal() {
  tm new-session -d -s "$1" -x 200 -y 50 \
    "env -i PATH=\"$PATH\" HOME=\"$ci_work\" HISTFILE=/dev/null TERM=xterm-256color LANG=C.UTF-8 PS1='$ ' bash --norc --noprofile"
  wait_screen "$1" '^\$ $'
}

# screen NAME: the terminal's text, wrapped lines joined, with scrollback.
screen() { tm capture-pane -p -J -S -500 -t "$1"; }

# wait_screen NAME REGEX...: waits (bounded) until every extended regular
# expression matches a line of the screen; on timeout, shows the screen.
wait_screen() {
  local name=$1 i re missing
  shift
  for i in $(seq 200); do
    missing=
    local text
    text=$(screen "$name")
    for re in "$@"; do
      grep -qE -- "$re" <<<"$text" || { missing=$re; break; }
    done
    [[ -z $missing ]] && return 0
    sleep 0.05 # polling the terminal; the bound is 200 polls, about 10s
  done
  fail "terminal $name: no line matching: $missing"
  echo "--- screen of $name" >&2
  screen "$name" | sed '/^$/d; s/^/  | /' >&2
  return 1
}

# type_line NAME TEXT: types TEXT and presses Enter.
type_line() { tm send-keys -t "$1" -l -- "$2" && tm send-keys -t "$1" Enter; }

chat_cmd="$ci_bin chat --addr $addr --app support --user tess --session t1"

# 1. A new session: the transfer, and the answer under the agent's name.
open_terminal first
type_line first "$chat_cmd"
wait_screen first '^new session t1 of app support \(resume with --session t1\)$' '^you> $'
type_line first "I have a billing question"
wait_screen first \
  '^you> I have a billing question$' \
  '^  -> triage calls transfer_to_agent\(\{"agent_name":"billing"\}\)$' \
  '^  => triage transfers to billing$' \
  '^\[billing\] offline model: you said: I have a billing question$' \
  '^  \(events #1-#4 · tokens [0-9,]+ · cost unknown\)$'
type_line first "/quit"
type_line first 'echo "chat exited: $?"'
wait_screen first '^chat exited: 0$'
echo "--- terminal 1: new session"
screen first | sed '/^$/d; s/^/  | /'

# 2. A new client resumes the session.
open_terminal second
type_line second "$chat_cmd"
wait_screen second \
  '^resumed session t1 of app support \(4 events\)$' \
  '^#1 you> I have a billing question$' \
  '^#2   -> triage calls transfer_to_agent' \
  '^  => triage transfers to billing$' \
  '^#4 \[billing\] offline model: you said: I have a billing question$' \
  '^you> $'
type_line second "and another one"
wait_screen second \
  '^you> and another one$' \
  '^\[billing\] offline model: you said: and another one$' \
  '^  \(events #5-#6 · tokens [0-9,]+ · cost unknown\)$'
tm send-keys -t second C-d
type_line second 'echo "chat exited: $?"'
wait_screen second '^chat exited: 0$'
echo "--- terminal 2: resumed"
screen second | sed '/^$/d; s/^/  | /'
if [[ $(screen second | grep -c 'transfers to') != 1 ]]; then
  fail "the resumed session transferred again; billing should answer directly"
fi
show=$("$ci_bin" sessions show --addr "$addr" --app support --user tess t1)
expect_match "sessions show t1" "$show" '^session t1  app support  user tess  events 6  '
expect_match "sessions show t1" "$show" '^#6 \[billing\] offline model: you said: and another one$'

# 3. An app that is not there.
open_terminal third
type_line third "$ci_bin chat --addr $addr --app nope --user tess"
type_line third 'echo "chat exited: $?"'
wait_screen third \
  "^agentrunner: NotFound: app \"nope\" is not served by $addr; it serves: demo, orders, slow, support$" \
  '^chat exited: 1$'
echo "--- terminal 3: unknown app"
screen third | sed '/^$/d; s/^/  | /'

stop_server "$server_pid" || fail "server did not stop cleanly"
if ((ci_failed)); then
  echo "--- server log" >&2
  cat "$ci_work/chat.log" >&2
  exit 1
fi
echo "chat: streams with agent names, shows the transfer, resumes after a restart, reports an unknown app"
