#!/usr/bin/python3
"""agentrunner from Python: create a session, run two messages, list artifacts.

Usage: /usr/bin/python3 examples/python/client.py [--addr 127.0.0.1:50051] [--app demo] [--user U] [MESSAGE ...]
Uses Debian's python3-grpcio and python3-protobuf, and the stubs in gen/python.

Against a server with authentication (docs/security.md): --token-file FILE (or env
AGENTRUNNER_TOKEN) sends a bearer token, --ca-file CA.pem turns TLS on, --cert-file and
--key-file add a client certificate (mTLS).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gen", "python"))

import grpc  # noqa: E402
from agentrunner.v1 import content_pb2, run_pb2  # noqa: E402
from agentrunner.service.v1 import (  # noqa: E402
    artifact_service_pb2, artifact_service_pb2_grpc,
    runner_service_pb2, runner_service_pb2_grpc,
    session_service_pb2, session_service_pb2_grpc,
)

CODE_NAMES = {c.value[0]: c.name for c in grpc.StatusCode}


def add_security_args(ap):
    """The flags of channel and auth_metadata."""
    ap.add_argument("--token-file", help="file holding the bearer token (env AGENTRUNNER_TOKEN holds the token itself)")
    ap.add_argument("--ca-file", help="PEM CA of the server's certificate; turns TLS on")
    ap.add_argument("--cert-file", help="PEM client certificate (mTLS), with --key-file")
    ap.add_argument("--key-file", help="PEM key of --cert-file")


def channel(args):
    """A channel to the server: TLS when a CA or client certificate is given, else plaintext."""
    # The server sends responses of up to 32 MiB (a page of a large session);
    # gRPC's default would refuse anything above 4 MiB.
    options = [("grpc.max_receive_message_length", 32 << 20)]
    if not (args.ca_file or args.cert_file):
        return grpc.insecure_channel(args.addr, options=options)

    def read(path):
        if not path:
            return None
        with open(path, "rb") as f:
            return f.read()
    creds = grpc.ssl_channel_credentials(
        root_certificates=read(args.ca_file), private_key=read(args.key_file), certificate_chain=read(args.cert_file))
    return grpc.secure_channel(args.addr, creds, options=options)


def auth_metadata(args):
    """The bearer token as call metadata (works over TLS and, on loopback, plaintext)."""
    token = os.environ.get("AGENTRUNNER_TOKEN", "")
    if args.token_file:
        with open(args.token_file) as f:
            token = f.read().rstrip("\r\n")
    return [("authorization", f"Bearer {token}")] if token else []


def run(runner, app, user, session_id, text, md=()):
    """Sends one message and prints the stream; returns the authors of the complete events."""
    req = runner_service_pb2.RunRequest(
        app_name=app, user_id=user, session_id=session_id,
        new_message=content_pb2.Content(role="user", parts=[content_pb2.Part(text=text)]),
        run_config=run_pb2.RunConfig(streaming_mode=run_pb2.STREAMING_MODE_SSE),
    )
    authors = []
    streaming = False
    for resp in runner.Run(req, timeout=30, metadata=md):
        if streaming and not (resp.HasField("event") and resp.event.partial):
            print()
            streaming = False
        if resp.HasField("run"):  # the run record, first and last; see GetRun
            continue
        if resp.HasField("error"):  # an agent failed; the run goes on
            print(f"[agent error {CODE_NAMES.get(resp.error.code, resp.error.code)}] {resp.error.message}")
            continue
        ev = resp.event
        text = "".join(p.text for p in ev.content.parts if p.HasField("text") and not p.thought)
        if ev.partial:  # streamed text; the complete event follows
            if not streaming:
                print(f"{ev.author} (streaming): ", end="")
            print(text, end="", flush=True)
            streaming = True
            continue
        authors.append(ev.author)
        shown = [text] if text else []
        shown += [f"calls {p.function_call.name}" for p in ev.content.parts if p.HasField("function_call")]
        shown += [f"{p.function_response.name} returned" for p in ev.content.parts if p.HasField("function_response")]
        if ev.actions.transfer_to_agent:
            shown.append(f"-> transfer to {ev.actions.transfer_to_agent}")
        if ev.error_code:  # the model or a tool failed; the event says how
            shown.append(f"[{ev.error_code}] {ev.error_message}")
        print(f"#{ev.sequence} {ev.author}: {' '.join(shown)}")
    if streaming:
        print()
    return authors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addr", default=os.environ.get("AGENTRUNNER_ADDR", "127.0.0.1:50051"))
    ap.add_argument("--app", default="demo")
    ap.add_argument("--user", default="python-example")
    add_security_args(ap)
    ap.add_argument("messages", nargs="*", default=["Hello! What can you do?", "Tell me more."])
    args = ap.parse_args()

    md = auth_metadata(args)
    with channel(args) as ch:
        sessions = session_service_pb2_grpc.SessionServiceStub(ch)
        runner = runner_service_pb2_grpc.RunnerServiceStub(ch)
        artifacts = artifact_service_pb2_grpc.ArtifactServiceStub(ch)
        try:
            sess = sessions.CreateSession(
                session_service_pb2.CreateSessionRequest(app_name=args.app, user_id=args.user), timeout=10, metadata=md
            ).session
            print(f"session {sess.session_id}")
            # The first author of each run is the agent the runner chose to answer.
            answered = []
            for msg in args.messages:
                authors = run(runner, args.app, args.user, sess.session_id, msg, md)
                answered.append(authors[0] if authors else "-")
            arts = artifacts.ListArtifacts(artifact_service_pb2.ListArtifactsRequest(
                app_name=args.app, user_id=args.user, session_id=sess.session_id), timeout=10, metadata=md)
            print(f"artifacts: [{', '.join(a.filename for a in arts.artifacts)}]")
            got = sessions.GetSession(session_service_pb2.GetSessionRequest(
                app_name=args.app, user_id=args.user, session_id=sess.session_id), timeout=10, metadata=md)
            print(f"stored events: {len(got.events)}; answered by: {', '.join(answered)}")
        except grpc.RpcError as e:
            print(f"RPC failed: {e.code().name}: {e.details()}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
