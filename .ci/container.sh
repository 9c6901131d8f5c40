#!/usr/bin/env bash
# .ci/container.sh: the container image (examples/container) built and run
# with Debian's podman, offline: no base image is pulled.
#  1. installs podman, runc and podman-compose when missing, and sets
#     runtime="runc" and ulimits within the machine's hard limits in
#     /etc/containers/containers.conf when that file does not exist (crun
#     fails on these machines' cgroups);
#  2. builds the static binary on the host and the FROM scratch image;
#  3. runs it read-only as the non-root user: the health check inside the
#     container (agentrunner health), then a Run over the published port;
#  4. builds a PostgreSQL image from the host's Debian postgresql-15 (its
#     binaries and libraries, FROM scratch) and runs
#     examples/container/compose.yaml, two replicas on it, with a Run on
#     each replica.
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
start=$SECONDS

setup() {
  local missing=() p
  for p in podman runc podman-compose; do command -v "$p" >/dev/null || missing+=("$p"); done
  if ((${#missing[@]})); then
    echo "installing ${missing[*]}"
    "${sudo[@]}" apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends podman runc podman-compose
  fi
  if [[ ! -e /etc/containers/containers.conf ]]; then
    "${sudo[@]}" mkdir -p /etc/containers
    printf '%s\n' '[containers]' 'default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]' \
      '[engine]' 'runtime = "runc"' | "${sudo[@]}" tee /etc/containers/containers.conf >/dev/null
  fi
  [[ -x $GRPCURL ]] || GOBIN="$PWD/.tmp/bin" go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4
}

build() {
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$CTX/agentrunner" ./cmd/agentrunner
  cp /etc/ssl/certs/ca-certificates.crt "$CTX/"
  "${sudo[@]}" podman build -q -t "$IMAGE" "$CTX"
  echo "binary: $(stat -c %s "$CTX/agentrunner") bytes; image: $("${sudo[@]}" podman image inspect -f '{{.Size}}' "$IMAGE") bytes"
}

# wait_health ADDR polls the health check (no systemd: podman runs no
# timer for HEALTHCHECK), for up to 60 s.
wait_health() {
  local i
  for i in $(seq 120); do
    "$CTX/agentrunner" health --addr "$1" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "no SERVING from $1 within 60s" >&2
  return 1
}

# run_demo ADDR SESSION: a Run of the demo app; its summary must come back.
run_demo() {
  local out
  out=$("$GRPCURL" -plaintext -max-time 30 -d "{\"app_name\":\"demo\",\"user_id\":\"ci\",\"session_id\":\"$2\",\"new_message\":{\"parts\":[{\"text\":\"Hello from the container test\"}]}}" \
    "$1" agentrunner.service.v1.RunnerService/Run)
  grep -q 'Summary: ' <<<"$out" || { echo "Run on $1 gave:"; echo "$out"; return 1; } >&2
  echo "Run on $1 ($2): ok"
}

single() {
  "${sudo[@]}" podman rm -f ar-ci >/dev/null 2>&1 || true
  "${sudo[@]}" podman run -d --name ar-ci --read-only --user 65532:65532 -p 127.0.0.1:50071:50051 \
    -v ar-ci-data:/data "$IMAGE" serve --addr 0.0.0.0:50051 --http-addr "" --insecure-no-auth >/dev/null
  trap '"${sudo[@]}" podman logs ar-ci 2>&1 | tail -20; "${sudo[@]}" podman rm -f ar-ci >/dev/null; "${sudo[@]}" podman volume rm -f ar-ci-data >/dev/null' RETURN
  wait_health 127.0.0.1:50071
  "${sudo[@]}" podman healthcheck run ar-ci && echo "HEALTHCHECK inside the container: healthy"
  local user
  user=$("${sudo[@]}" podman inspect -f '{{.Config.User}} readonly={{.HostConfig.ReadonlyRootfs}}' ar-ci)
  echo "container user and root filesystem: $user"
  [[ $user == "65532:65532 readonly=true" ]]
  run_demo 127.0.0.1:50071 single
}

# pg_image makes a FROM scratch image of the host's postgres server, its
# libraries and a cluster initialized here (trust auth on the pod network).
pg_image() {
  local d bin=/usr/lib/postgresql/15/bin
  d=$(mktemp -d)
  mkdir -p "$d/rootfs/usr/lib/postgresql/15" "$d/rootfs/tmp" "$d/rootfs/var/run/postgresql"
  cp -a /usr/lib/postgresql/15/{bin,lib} "$d/rootfs/usr/lib/postgresql/15/"
  mkdir -p "$d/rootfs/usr/share/postgresql" && cp -a /usr/share/postgresql/15 "$d/rootfs/usr/share/postgresql/"
  cp -aL --parents $(ldd "$bin/postgres" | awk '/=>/ {print $3} /ld-linux/ {print $1}') "$d/rootfs/"
  chown -R 65533:65533 "$d/rootfs/tmp" "$d/rootfs/var/run/postgresql"
  install -d -o 65533 -g 65533 -m 700 "$d/rootfs/pgdata"
  setpriv --reuid 65533 --regid 65533 --clear-groups "$bin/initdb" -D "$d/rootfs/pgdata" -U agentrunner --auth=trust -E UTF8 >/dev/null
  echo "listen_addresses = '*'" >>"$d/rootfs/pgdata/postgresql.conf"
  echo "host all all 0.0.0.0/0 trust" >>"$d/rootfs/pgdata/pg_hba.conf"
  printf '%s\n' 'FROM scratch' 'COPY rootfs/ /' 'USER 65533:65533' \
    'ENTRYPOINT ["/usr/lib/postgresql/15/bin/postgres", "-D", "/pgdata"]' >"$d/Containerfile"
  "${sudo[@]}" podman build -q -t "$PG_IMAGE" "$d" >/dev/null
  rm -rf "$d"
}

replicas() {
  pg_image
  local compose=("${sudo[@]}" env AGENTRUNNER_PG_IMAGE="$PG_IMAGE" AGENTRUNNER_IMAGE="$IMAGE"
    podman-compose -p arci -f "$CTX/compose.yaml")
  "${compose[@]}" down -v >/dev/null 2>&1 || true
  "${compose[@]}" up -d >/dev/null
  trap '"${compose[@]}" logs 2>&1 | tail -30; "${compose[@]}" down -v >/dev/null 2>&1' RETURN
  wait_health 127.0.0.1:50061
  wait_health 127.0.0.1:50062
  run_demo 127.0.0.1:50061 replica1
  run_demo 127.0.0.1:50062 replica2
}

setup
build
single
replicas
echo "container step: ok in $((SECONDS - start))s"
