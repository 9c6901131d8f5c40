#!/usr/bin/python3
"""agentrunner from Python with a tool the client executes: the agent's get_order calls run here.

Usage: /usr/bin/python3 examples/python/tools.py [--addr 127.0.0.1:50051] [--app orders] [--user U] [MESSAGE ...]
(and --token-file, --ca-file, --cert-file, --key-file as client.py takes them)

The app declares get_order in its apps file (function_tools, with a JSON Schema). When the model
calls it, the run ends with the call's id in the event's long_running_tool_ids; this client looks
the order up and answers with a Run whose message holds a function_response for every waiting
call, until a run ends with nothing to wait on.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gen", "python"))

import grpc  # noqa: E402
from google.protobuf import struct_pb2  # noqa: E402
from agentrunner.v1 import content_pb2  # noqa: E402
from agentrunner.service.v1 import (  # noqa: E402
    runner_service_pb2, runner_service_pb2_grpc,
    session_service_pb2, session_service_pb2_grpc,
)
from client import add_security_args, auth_metadata, channel  # noqa: E402

# The client's own order system.
ORDERS = {"42": {"status": "shipped", "carrier": "DHL"}, "7": {"status": "packing"}}


def get_order(args):
    order = ORDERS.get(args.get("order_id", ""))
    return order if order else {"error": f"no order {args.get('order_id')!r}"}


TOOLS = {"get_order": get_order}


def run(runner, app, user, session_id, message, md=()):
    """Runs one message; prints the events and returns the calls the run waits on."""
    req = runner_service_pb2.RunRequest(app_name=app, user_id=user, session_id=session_id, new_message=message)
    waiting = []
    for resp in runner.Run(req, timeout=30, metadata=md):
        if resp.HasField("run"):  # the run record, first and last
            continue
        if resp.HasField("error"):
            print(f"[agent error {resp.error.code}] {resp.error.message}")
            continue
        ev = resp.event
        for p in ev.content.parts:
            if p.HasField("text"):
                print(f"#{ev.sequence} {ev.author}: {p.text}")
            elif p.HasField("function_call"):
                fc = p.function_call
                wait = fc.id in ev.long_running_tool_ids
                print(f"#{ev.sequence} {ev.author}: calls {fc.name} {dict(fc.args)}" + (" (waits for us)" if wait else ""))
                if wait:
                    waiting.append(fc)
            elif p.HasField("function_response"):
                print(f"#{ev.sequence} {ev.author}: {p.function_response.name} returned {dict(p.function_response.response)}")
    return waiting


def answer(calls):
    """Executes the calls here and returns the message that answers them all."""
    parts = []
    for fc in calls:
        result = struct_pb2.Struct()
        result.update(TOOLS[fc.name](dict(fc.args)))
        print(f"  (client ran {fc.name} -> {dict(result)})")
        parts.append(content_pb2.Part(function_response=content_pb2.FunctionResponse(id=fc.id, name=fc.name, response=result)))
    return content_pb2.Content(role="user", parts=parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addr", default=os.environ.get("AGENTRUNNER_ADDR", "127.0.0.1:50051"))
    ap.add_argument("--app", default="orders")
    ap.add_argument("--user", default="python-tools")
    add_security_args(ap)
    ap.add_argument("messages", nargs="*", default=['Where is my order? call get_order {"order_id": "42"}'])
    args = ap.parse_args()
    md = auth_metadata(args)
    with channel(args) as ch:
        sessions = session_service_pb2_grpc.SessionServiceStub(ch)
        runner = runner_service_pb2_grpc.RunnerServiceStub(ch)
        try:
            sess = sessions.CreateSession(
                session_service_pb2.CreateSessionRequest(app_name=args.app, user_id=args.user), timeout=10, metadata=md).session
            print(f"session {sess.session_id}")
            for text in args.messages:
                message = content_pb2.Content(role="user", parts=[content_pb2.Part(text=text)])
                for _ in range(10):  # bounded: a model could call tools forever
                    waiting = run(runner, args.app, args.user, sess.session_id, message, md)
                    if not waiting:
                        break
                    message = answer(waiting)
        except grpc.RpcError as e:
            print(f"RPC failed: {e.code().name}: {e.details()}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
