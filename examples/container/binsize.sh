#!/usr/bin/env bash
# examples/container/binsize.sh: what the image's binary is made of. Builds
# agentrunner as the Containerfile's binary is built but keeps the symbol
# table (-s drops it; -w, the DWARF, is dropped here too), then adds up
# `go tool nm -size` by module (or standard-library package), biggest first.
# The symbols cover code and data (.text, .rodata, .data); the rest of the
# file is mostly .gopclntab (the runtime's line tables, about as big again
# as the code, which no flag removes).
#   bash examples/container/binsize.sh [N]     the N biggest (default 25)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags '-w' -o "$out/agentrunner" ./cmd/agentrunner
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$out/stripped" ./cmd/agentrunner
echo "stripped static binary: $(stat -c %s "$out/stripped") bytes"
size -A "$out/stripped" | awk '$1 ~ /^\./ && $2 > 100000 { printf "  section %-14s %6.1f MB%s\n", $1, $2 / 1e6, ($1 ~ /bss$/ ? " (zeroed memory at run time, not in the file)" : "") }'
# Only symbols in the file count: not those in .bss/.noptrbss, zeroed
# memory at run time (such as crypto's 32 MiB FIPS DRBG buffer, which nm
# marks D). This module's packages are
# listed one by one. A symbol's package is its name up to the first dot after the last slash
# (type:/go: runtime data is its own group); a module is the first three
# path elements of a dotted host (github.com/a/b), else the std package.
bss=$(size -A "$out/agentrunner" | awk '$1 ~ /bss$/ && (m == "" || $3 < m) { m = $3 } END { print m }')
go tool nm -size "$out/agentrunner" | awk -v own="^$(go list -m)/" -v bss="$bss" '
  function hex(s,   i, v) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(tolower(s), i, 1)) - 1; return v }
  $3 ~ /^[TtRrDd]$/ && $2 > 0 && hex($1) < bss {
    name = $4; gsub(/%2e/, ".", name)
    if (name ~ /^(type:|go:|runtime\.|gclocals|\$f64|\$f32)/) { mod = "runtime, types and Go data" }
    else {
      sub(/^\*?\(?/, "", name)
      pkg = name; i = match(pkg, /\/[^\/]*$/)
      rest = i ? substr(pkg, i) : pkg; dot = index(rest, ".")
      pkg = dot ? substr(pkg, 1, (i ? i - 1 : 0) + dot - 1) : pkg
      n = split(pkg, p, "/")
      if (pkg ~ own) mod = pkg
      else if (p[1] ~ /\./) {
        k = (p[1] ~ /^(github\.com|golang\.org|go\.opentelemetry\.io)$/) ? 3 : 2
        mod = p[1]; for (j = 2; j <= (n < k ? n : k); j++) mod = mod "/" p[j]
      } else mod = "std: " p[1]
    }
    sum[mod] += $2; total += $2
  }
  END {
    for (m in sum) printf "%10.2f MB  %5.1f%%  %s\n", sum[m] / 1e6, 100 * sum[m] / total, m
    printf "%10.2f MB  100.0%%  (all symbols in the file)\n", total / 1e6
  }' | sort -rn | head -"$((${1:-25} + 1))"
