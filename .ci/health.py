#!/usr/bin/python3
"""Exits 0 when the gRPC server at ADDR reports SERVING, 1 otherwise.

Usage: /usr/bin/python3 .ci/health.py ADDR [CA_FILE]

With CA_FILE the channel is TLS, trusting that CA (health checks need no
credentials even when the server has authentication on).

Debian has no grpcio-health-checking, so this calls grpc.health.v1.Health/Check
with raw bytes: the request is empty (the server as a whole) and a SERVING
answer is status = 1, encoded as b"\\x08\\x01".
"""
import sys

import grpc

if len(sys.argv) > 2:
    with open(sys.argv[2], "rb") as f:
        channel = grpc.secure_channel(sys.argv[1], grpc.ssl_channel_credentials(root_certificates=f.read()))
else:
    channel = grpc.insecure_channel(sys.argv[1])

with channel as ch:
    check = ch.unary_unary("/grpc.health.v1.Health/Check")
    try:
        resp = check(b"", timeout=2)
    except grpc.RpcError as e:
        print(f"health: {e.code().name}: {e.details()}", file=sys.stderr)
        sys.exit(1)
    if resp != b"\x08\x01":
        print(f"health: not SERVING: {resp!r}", file=sys.stderr)
        sys.exit(1)
