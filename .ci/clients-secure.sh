#!/usr/bin/env bash
# .ci/clients-secure.sh: against a server with TLS, bearer tokens and mTLS
# (serve --tls-cert --tls-key --client-ca --auth-file), grpcurl, the
# Python, TypeScript and Go example clients and `agentrunner sessions` each
# complete a run with a token and with a client certificate, and are refused
# what their principal may not do: another user's data is PermissionDenied,
# no credentials is Unauthenticated. Health checks need no credentials
# (start_server checks health without any).
#
# Certificates come from `agentrunner certs` (Go's crypto/x509), the token
# from /dev/urandom, its SHA-256 from sha256sum, as the README says.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source .ci/lib.sh
trap stop_servers EXIT

if ! /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || [[ ! -x node_modules/.bin/tsx ]]; then
  echo "clients-secure: missing python3-grpcio/python3-protobuf or node_modules; run: bash .ci/run clients-setup" >&2
  exit 1
fi
# As the walkthrough does: grpcurl pinned, in the repo's .tmp/bin.
GOBIN="$PWD/.tmp/bin" go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4
grpcurl=$PWD/.tmp/bin/grpcurl

build_agentrunner
go build -o "$ci_work/example-go" ./examples/go

certs=$ci_work/certs
"$ci_bin" certs --dir "$certs" --hosts localhost,127.0.0.1 --clients carol,mallory
ca=$certs/ca.pem
token=$(head -c 32 /dev/urandom | base64 | tr -d '/+=')
printf %s "$token" >"$ci_work/alice.token"
cat >"$ci_work/auth.yaml" <<YAML
principals:
  - name: alice
    token_sha256: $(printf %s "$token" | sha256sum | cut -d' ' -f1)
    apps: [demo]
    users: [self]
  - name: carol
    mtls_identity: carol
    apps: ["*"]
    users: [self]
YAML

server_ca=$ca
start_server secure -- --auth-file "$ci_work/auth.yaml" --tls-cert "$certs/server.pem" --tls-key "$certs/server.key" --client-ca "$ca"
server_ca=
addr=$server_addr
pid=$server_pid
grep -q 'tls=true mtls=true auth=true' "$ci_work/secure.log" || fail "the serving line does not say TLS, mTLS and auth are on"

with_token=(--ca-file "$ca" --token-file "$ci_work/alice.token")
with_cert=(--ca-file "$ca" --cert-file "$certs/client-carol.pem" --key-file "$certs/client-carol.key")

# client LANG ARGS...: that language's example, keeping stdout in out,
# stderr in err and the exit status in rc.
client() {
  local lang=$1
  shift
  set +e
  case $lang in
  python) /usr/bin/python3 examples/python/client.py "$@" ;;
  ts) node_modules/.bin/tsx examples/ts/client.ts "$@" ;;
  go) "$ci_work/example-go" "$@" ;;
  esac >"$ci_work/out" 2>"$ci_work/err"
  rc=$?
  set -e
  out=$(<"$ci_work/out")
  err=$(<"$ci_work/err")
  echo "--- $lang $* (exit $rc)" | sed "s#$ci_work/##g"
  sed 's/^/  | /' "$ci_work/out" | tail -3
  [[ -z $err ]] || sed 's/^/  ! /' "$ci_work/err"
}

for lang in python ts go; do
  client "$lang" --addr "$addr" --app demo --user alice "${with_token[@]}"
  ((rc == 0)) || fail "$lang over TLS with a token: exit status $rc"
  expect_match "$lang over TLS with a token" "$out" '^stored events: 20; answered by: greeter, greeter$'

  client "$lang" --addr "$addr" --app demo --user carol "${with_cert[@]}"
  ((rc == 0)) || fail "$lang over mTLS: exit status $rc"
  expect_match "$lang over mTLS" "$out" '^stored events: 20; answered by: greeter, greeter$'

  client "$lang" --addr "$addr" --app demo --user carol "${with_token[@]}"
  ((rc != 0)) || fail "$lang as alice acting as carol: exit status 0"
  expect_match "$lang as alice acting as carol" "$err" '^RPC failed: (PermissionDenied|PERMISSION_DENIED): not granted user "carol" on app "demo"'

  client "$lang" --addr "$addr" --app demo --user alice --ca-file "$ca"
  ((rc != 0)) || fail "$lang without credentials: exit status 0"
  expect_match "$lang without credentials" "$err" '^RPC failed: (Unauthenticated|UNAUTHENTICATED): no credentials'
done

# Tools the client executes, over mTLS (carol may use the orders app).
for lang in python ts; do
  what="$lang tools over mTLS"
  set +e
  case $lang in
  python) out=$(/usr/bin/python3 examples/python/tools.py --addr "$addr" --user carol "${with_cert[@]}" 2>"$ci_work/err") ;;
  ts) out=$(node_modules/.bin/tsx examples/ts/tools.ts --addr "$addr" --user carol "${with_cert[@]}" 2>"$ci_work/err") ;;
  esac
  rc=$?
  set -e
  echo "--- $what (exit $rc)"
  sed 's/^/  | /' <<<"$out"
  ((rc == 0)) || fail "$what: exit status $rc: $(<"$ci_work/err")"
  expect_contains "$what" "$out" '#4 clerk: offline model: get_order returned {"carrier":"DHL","status":"shipped"}'
done

# grpcurl: reflection and the RPCs with a token, then with a certificate.
# run_grpcurl USER ARGS...: creates a session of USER and runs a message.
run_grpcurl() {
  local user=$1 created session ran
  shift
  echo "--- grpcurl as $user: $*" | sed "s#$ci_work/##g; s#$token#\$TOKEN#g"
  created=$("$grpcurl" "$@" -d "{\"app_name\": \"demo\", \"user_id\": \"$user\"}" "$addr" agentrunner.service.v1.SessionService/CreateSession) ||
    { fail "grpcurl CreateSession as $user"; return; }
  session=$(sed -n 's/.*"sessionId": "\([0-9a-f]*\)".*/\1/p' <<<"$created")
  ran=$("$grpcurl" "$@" -d "{\"app_name\": \"demo\", \"user_id\": \"$user\", \"session_id\": \"$session\", \"new_message\": {\"role\": \"user\", \"parts\": [{\"text\": \"hi\"}]}}" \
    "$addr" agentrunner.service.v1.RunnerService/Run) || { fail "grpcurl Run as $user"; return; }
  grep -c '"author": "summary"' <<<"$ran" | sed 's/^/  | summary events: /'
  expect_contains "grpcurl Run as $user" "$ran" '"status": "RUN_STATUS_SUCCEEDED"'
}
run_grpcurl alice -cacert "$ca" -H "authorization: Bearer $token"
run_grpcurl carol -cacert "$ca" -cert "$certs/client-carol.pem" -key "$certs/client-carol.key"

set +e
msg=$("$grpcurl" -cacert "$ca" "$addr" list 2>&1)
code=$?
set -e
echo "--- grpcurl list without credentials (exit $code): $msg"
((code != 0)) || fail "reflection without credentials succeeded"
expect_contains "grpcurl list without credentials" "$msg" "Unauthenticated"
set +e
msg=$("$grpcurl" -cacert "$ca" -cert "$certs/client-mallory.pem" -key "$certs/client-mallory.key" "$addr" list 2>&1)
code=$?
set -e
echo "--- grpcurl list as mallory, a certificate no principal names (exit $code): $msg"
((code != 0)) || fail "reflection as mallory succeeded"
expect_contains "grpcurl list as mallory" "$msg" "mallory matches no principal"

# agentrunner sessions with a token from the environment: alice sees her
# sessions (python, ts, go, grpcurl), and not every user's.
list=$(AGENTRUNNER_TOKEN=$token "$ci_bin" sessions list --addr "$addr" --ca-file "$ca" --app demo --user alice) || fail "sessions list as alice"
echo "$list" | sed 's/^/  | /'
[[ $(grep -c '^alice ' <<<"$list") == 4 ]] || fail "sessions list as alice: want 4 sessions"
set +e
msg=$(AGENTRUNNER_TOKEN=$token "$ci_bin" sessions list --addr "$addr" --ca-file "$ca" --app demo --user "" 2>&1)
code=$?
set -e
echo "--- sessions list of every user as alice (exit $code): $msg"
[[ $code == 1 && $msg == *"PermissionDenied"* ]] || fail "alice listed every user's sessions"

grep -q 'level=WARN msg="access denied" principal=alice' "$ci_work/secure.log" || fail "no denial of alice in the log"
if grep -qF "$token" "$ci_work/secure.log"; then fail "the token reached the server log"; fi
stop_server "$pid" || fail "server did not stop cleanly"
if ((ci_failed)); then
  echo "--- server log" >&2
  cat "$ci_work/secure.log" >&2
  exit 1
fi
echo "clients-secure: grpcurl, Python, TypeScript and Go over TLS with a token and over mTLS passed"
