#!/usr/bin/env bash
# .ci/container.sh: the container image (examples/container) built and run
# with Debian's podman, offline: no base image is pulled.
#  1. installs podman, runc, podman-compose, iptables and the CNI dnsname
#     plugin (and Debian's postgresql-15 server binaries) when missing,
#     and sets runtime="runc" and ulimits within the machine's hard limits
#     in /etc/containers/containers.conf when that file does not exist
#     (crun fails on these machines' cgroups); then checks
#     examples/container/k8s against Kubernetes' schemas (k8s_test.go);
#  2. builds the stripped static binary on the host and the FROM scratch
#     image (docker format: the OCI format drops HEALTHCHECK), and checks
#     that the image is at most the binary plus 5 MB;
#  3. runs it read-only as the non-root user: the HEALTHCHECK inside the
#     container (agentrunner health), then a Run over the published port;
#  4. builds a PostgreSQL image from the host's Debian postgresql-15 (its
#     binaries and libraries, FROM scratch) and runs
#     examples/container/compose.yaml, two replicas on it, with a Run on
#     each replica.
# Every wait is bounded; containers, volumes and the network it made are
# removed on exit, failed or not (their logs are printed on failure).
# Needs root or sudo, Go, and grpcurl (installed into .tmp/bin as the
# walkthrough does).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sudo=()
((EUID == 0)) || sudo=(sudo)
IMAGE=localhost/agentrunner:dev
PG_IMAGE=localhost/agentrunner-ci-postgres:15
CTX=examples/container
GRPCURL=$PWD/.tmp/bin/grpcurl
PGBIN=/usr/lib/postgresql/15/bin
start=$SECONDS
# podman, bounded; without systemd it logs an error for the HEALTHCHECK
# timer it cannot make (or remove) at each run and rm: that line is dropped.
podman() {
  "${sudo[@]}" timeout 300 podman "$@" 2> >(nosystemd)
}
nosystemd() { grep -Ev 'unable to get systemd connection|^Error: inspecting object: no such volume arci_' >&2 || true; }
compose() {
  "${sudo[@]}" env AGENTRUNNER_PG_IMAGE="$PG_IMAGE" AGENTRUNNER_IMAGE="$IMAGE" \
    timeout 300 podman-compose -p arci -f "$CTX/compose.yaml" "$@" 2> >(nosystemd)
}
# compose_logs: the end of each service's log.
compose_logs() {
  local c
  for c in $(podman ps -a --format '{{.Names}}' --filter label=io.podman.compose.project=arci); do
    echo "== $c ($(podman inspect -f '{{.State.Status}}, restarts {{.RestartCount}}' "$c"))"
    podman logs --tail 10 "$c" 2>&1
  done
}
# compose_down: podman-compose 1.0.3's down -v leaves the containers'
# anonymous volumes (the image's /data) and the network: removed here.
compose_down() {
  local ids
  ids=$(podman ps -a -q --filter label=io.podman.compose.project=arci)
  [[ -z $ids ]] || podman rm -f -v -t 5 $ids >/dev/null
  compose down -v -t 5 >/dev/null 2>&1 || true
  podman network rm -f arci_default >/dev/null 2>&1 || true
}
phase() { echo "--- $1 (at ${SECONDS_SINCE:-$((SECONDS - start))}s)"; }

# What to undo on exit, last first; with the logs when the script failed.
cleanups=()
on_exit() {
  local rc=$? i
  for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do
    eval "${cleanups[i]}" || true
  done
  ((rc == 0)) || echo "container step: FAILED (rc $rc) after $((SECONDS - start))s" >&2
}
trap on_exit EXIT
failed() { [[ ${1:-} != 0 ]]; }

# runc named: podman's dependency "crun | runc" would otherwise bring
# crun. --no-install-recommends keeps CNI networking
# (containernetworking-plugins) rather than netavark; the dnsname plugin
# lets compose's services find each other by name (postgres); iptables
# maps the published ports.
debs=(podman runc podman-compose iptables golang-github-containernetworking-plugin-dnsname)
setup() {
  phase setup
  local missing=() p
  for p in "${debs[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
  done
  if [[ ! -x $PGBIN/postgres ]]; then
    missing+=(postgresql-15)
    # Only the server's binaries are wanted: no system cluster. A
    # createcluster.conf already there is someone's: left as it is.
    if [[ ! -e /etc/postgresql-common/createcluster.conf ]]; then
      "${sudo[@]}" mkdir -p /etc/postgresql-common
      echo 'create_main_cluster = false' | "${sudo[@]}" tee /etc/postgresql-common/createcluster.conf >/dev/null
    fi
  fi
  if ((${#missing[@]})); then
    echo "installing ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      -o Dpkg::Options::=--force-confold "${missing[@]}" >/dev/null
  fi
  if [[ ! -e /etc/containers/containers.conf ]]; then
    "${sudo[@]}" mkdir -p /etc/containers
    printf '%s\n' '[containers]' 'default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]' \
      '[engine]' 'runtime = "runc"' | "${sudo[@]}" tee /etc/containers/containers.conf >/dev/null
  fi
  podman --version
  [[ -x $GRPCURL ]] || GOBIN="$PWD/.tmp/bin" go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4
}

build() {
  phase "build: static binary"
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$CTX/agentrunner" ./cmd/agentrunner
  cp /etc/ssl/certs/ca-certificates.crt "$CTX/"
  if file_out=$(file -b "$CTX/agentrunner" 2>/dev/null); then echo "binary: $file_out"; fi
  phase "build: image"
  local old
  old=$(podman image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
  podman build -q --format docker -t "$IMAGE" "$CTX" >/dev/null
  # The previous build, now untagged, goes.
  [[ -z $old || $old == $(podman image inspect -f '{{.Id}}' "$IMAGE") ]] || podman rmi "$old" >/dev/null 2>&1 || true
  local bin img
  bin=$(stat -c %s "$CTX/agentrunner")
  img=$(podman image inspect -f '{{.Size}}' "$IMAGE")
  echo "binary: $bin bytes; image: $img bytes (+$((img - bin)))"
  if ((img > bin + 5000000)); then
    echo "the image is more than the binary plus 5 MB" >&2
    return 1
  fi
}

# wait_health ADDR polls the health service from the host (no systemd:
# podman runs no timer for HEALTHCHECK), for up to 60 s.
wait_health() {
  local i
  for i in $(seq 120); do
    "$CTX/agentrunner" health --addr "$1" --timeout 2s >/dev/null 2>&1 && return 0
    sleep 0.5 # polling the health service
  done
  echo "no SERVING from $1 within 60s" >&2
  return 1
}

# run_demo ADDR SESSION: a new session, then a Run of the demo app on it;
# its summary must come back.
run_demo() {
  local out
  "$GRPCURL" -plaintext -max-time 30 -d "{\"app_name\":\"demo\",\"user_id\":\"ci\",\"session_id\":\"$2\"}" \
    "$1" agentrunner.service.v1.SessionService/CreateSession >/dev/null
  out=$("$GRPCURL" -plaintext -max-time 30 -d "{\"app_name\":\"demo\",\"user_id\":\"ci\",\"session_id\":\"$2\",\"new_message\":{\"parts\":[{\"text\":\"Hello from the container test\"}]}}" \
    "$1" agentrunner.service.v1.RunnerService/Run)
  grep -q 'Summary: ' <<<"$out" || { echo "Run on $1 gave:"; echo "$out"; return 1; } >&2
  echo "Run on $1 ($2): $(grep -o 'Summary: [^"]*' <<<"$out" | head -1)"
}

single() {
  phase "single: read-only, non-root"
  podman rm -f ar-ci >/dev/null 2>&1 || true
  podman volume rm -f ar-ci-data >/dev/null 2>&1 || true
  cleanups+=('if failed $rc; then podman logs ar-ci 2>/dev/null | tail -20; fi; podman rm -f -v ar-ci >/dev/null 2>&1; podman volume rm -f ar-ci-data >/dev/null 2>&1')
  # --health-interval disable: no systemd here to run podman's timer; the
  # check itself is run below with podman healthcheck run.
  podman run -d --name ar-ci --health-interval disable --read-only --user 65532:65532 -p 127.0.0.1:50071:50051 \
    -v ar-ci-data:/data "$IMAGE" serve --addr 0.0.0.0:50051 --http-addr "" --insecure-no-auth >/dev/null
  wait_health 127.0.0.1:50071
  # The image's HEALTHCHECK, run by podman inside the container.
  podman healthcheck run ar-ci
  echo "HEALTHCHECK inside the container: healthy"
  local user
  user=$(podman inspect -f '{{.Config.User}} readonly={{.HostConfig.ReadonlyRootfs}}' ar-ci)
  echo "container user and root filesystem: $user"
  [[ $user == "65532:65532 readonly=true" ]]
  run_demo 127.0.0.1:50071 single
  # The process inside runs as 65532 too (not only the configured user).
  podman top ar-ci user huser args | tail -n +2
  podman rm -f -v -t 10 ar-ci >/dev/null
  podman volume rm -f ar-ci-data >/dev/null
}

# pg_image makes a FROM scratch image of the host's postgres server, its
# libraries and a cluster initialized here (trust auth on the pod network).
pg_image() {
  phase "replicas: PostgreSQL image"
  local d
  d=$(mktemp -d)
  cleanups+=("${sudo[*]} rm -rf '$d'")
  mkdir -p "$d/rootfs/usr/lib/postgresql/15" "$d/run"
  cp -a /usr/lib/postgresql/15/{bin,lib} "$d/rootfs/usr/lib/postgresql/15/"
  mkdir -p "$d/rootfs/usr/share/postgresql" && cp -a /usr/share/postgresql/15 "$d/rootfs/usr/share/postgresql/"
  # The shared libraries ldd names, each under its directory's real path
  # (Debian's /lib and /lib64 are links into /usr, made here too).
  mkdir -p "$d/rootfs/usr/lib/x86_64-linux-gnu" "$d/rootfs/usr/lib64"
  ln -s usr/lib "$d/rootfs/lib"
  ln -s usr/lib64 "$d/rootfs/lib64"
  local so
  for so in $(ldd "$PGBIN/postgres" | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
    mkdir -p "$d/rootfs$(readlink -f "$(dirname "$so")")"
    cp -L "$so" "$d/rootfs$(readlink -f "$(dirname "$so")")/"
  done
  # Debian's postgres reads the system's time zone data: UTC only.
  mkdir -p "$d/rootfs/usr/share/zoneinfo/Etc"
  cp -L /usr/share/zoneinfo/Etc/UTC "$d/rootfs/usr/share/zoneinfo/Etc/UTC"
  cp -L /usr/share/zoneinfo/Etc/UTC "$d/rootfs/usr/share/zoneinfo/UTC"
  # postgres (and initdb) look their user up: a passwd of one user. The
  # cluster is made by the host's postgres user (the package's), then
  # given to the image's.
  mkdir -p "$d/rootfs/etc"
  echo 'postgres:x:65533:65533::/pg:/nonexistent' >"$d/rootfs/etc/passwd"
  echo 'postgres:x:65533:' >"$d/rootfs/etc/group"
  chmod 755 "$d"
  install -d -m 755 "$d/pg"
  local as_pg=("${sudo[@]}" setpriv --reuid postgres --regid postgres --clear-groups)
  "${sudo[@]}" install -d -o postgres -m 700 "$d/pg/data"
  "${as_pg[@]}" "$PGBIN/initdb" -D "$d/pg/data" -U agentrunner --auth=trust -E UTF8 --locale=C >/dev/null
  printf '%s\n' "listen_addresses = '*'" "timezone = 'UTC'" "log_timezone = 'UTC'" | "${as_pg[@]}" tee -a "$d/pg/data/postgresql.conf" >/dev/null
  echo "host all all 0.0.0.0/0 trust" | "${as_pg[@]}" tee -a "$d/pg/data/pg_hba.conf" >/dev/null
  echo 'CREATE DATABASE agentrunner' | "${as_pg[@]}" \
    "$PGBIN/postgres" --single -D "$d/pg/data" postgres >"$d/single.log" 2>&1 || { cat "$d/single.log" >&2; return 1; }
  # COPY makes everything root's: the writable directories come apart,
  # with --chown (which keeps the modes below the destination: the data
  # directory must be 0700).
  printf '%s\n' 'FROM scratch' 'COPY rootfs/ /' \
    'COPY --chown=65533:65533 pg /pg' 'COPY --chown=65533:65533 run /tmp' \
    'COPY --chown=65533:65533 run /var/run/postgresql' 'USER 65533:65533' \
    'ENTRYPOINT ["/usr/lib/postgresql/15/bin/postgres", "-D", "/pg/data"]' >"$d/Containerfile"
  local old
  old=$(podman image inspect -f '{{.Id}}' "$PG_IMAGE" 2>/dev/null || true)
  podman build -q -t "$PG_IMAGE" "$d" >/dev/null
  [[ -z $old || $old == $(podman image inspect -f '{{.Id}}' "$PG_IMAGE") ]] || podman rmi "$old" >/dev/null 2>&1 || true
  "${sudo[@]}" rm -rf "$d"
  echo "PostgreSQL image: $(podman image inspect -f '{{.Size}}' "$PG_IMAGE") bytes"
}

replicas() {
  pg_image
  phase "replicas: compose up"
  compose_down
  cleanups+=('if failed $rc; then compose_logs; fi; compose_down')
  compose up -d >/dev/null
  wait_health 127.0.0.1:50061
  wait_health 127.0.0.1:50062
  run_demo 127.0.0.1:50061 replica1
  run_demo 127.0.0.1:50062 replica2
  # Both replicas share the store: replica2 sees replica1's session.
  "$GRPCURL" -plaintext -max-time 30 -d '{"app_name":"demo","user_id":"ci","session_id":"replica1"}' \
    127.0.0.1:50062 agentrunner.service.v1.SessionService/GetSession | grep -q 'Summary: '
  echo "replica2 reads replica1's session and its run's summary: ok"
  phase "replicas: compose down"
  compose_down
}

# The Kubernetes manifests against the API's schemas
# (examples/container/k8s_test.go; the test step runs it too).
manifests() {
  phase "k8s manifests: schema"
  go test -count=1 ./examples/container/
}

setup
manifests
build
single
replicas
echo "container step: ok in $((SECONDS - start))s"
