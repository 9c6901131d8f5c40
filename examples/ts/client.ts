// agentrunner from TypeScript (Node 20, Connect-ES over gRPC): create a
// session, run two messages, list artifacts.
//
// Usage: npx tsx examples/ts/client.ts [--addr 127.0.0.1:50051] [--app demo]
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SessionService } from "../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import { RunnerService } from "../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import { ArtifactService } from "../../gen/ts/agentrunner/service/v1/artifact_service_pb.js";
import type { Event } from "../../gen/ts/agentrunner/v1/event_pb.js";
import { StreamingMode } from "../../gen/ts/agentrunner/v1/run_pb.js";

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const addr = flag("addr", process.env.AGENTRUNNER_ADDR ?? "127.0.0.1:50051");
const app = flag("app", "demo");
const user = flag("user", "ts-example");
const transport = createGrpcTransport({ baseUrl: `http://${addr}` });
const sessions = createClient(SessionService, transport);
const runner = createClient(RunnerService, transport);
const artifacts = createClient(ArtifactService, transport);

function textOf(ev: Event): string {
  return (ev.content?.parts ?? [])
    .filter((p) => p.data.case === "text" && !p.thought)
    .map((p) => (p.data.case === "text" ? p.data.value : ""))
    .join("");
}

// run sends one message and prints the stream; it returns the complete events.
async function run(sessionId: string, text: string): Promise<Event[]> {
  const complete: Event[] = [];
  let streaming = false;
  const stream = runner.run(
    {
      appName: app,
      userId: user,
      sessionId,
      newMessage: { role: "user", parts: [{ data: { case: "text", value: text } }] },
      runConfig: { streamingMode: StreamingMode.SSE },
    },
    { timeoutMs: 30_000 },
  );
  for await (const resp of stream) {
    if (resp.payload.case === "error") {
      console.log(`\n[agent error ${resp.payload.value.code}] ${resp.payload.value.message}`);
      continue;
    }
    if (resp.payload.case !== "event") continue;
    const ev = resp.payload.value;
    if (ev.partial) {
      process.stdout.write(textOf(ev));
      streaming = true;
      continue;
    }
    if (streaming) {
      process.stdout.write("\n");
      streaming = false;
    }
    complete.push(ev);
    const calls = (ev.content?.parts ?? []).flatMap((p) => (p.data.case === "functionCall" ? [p.data.value.name] : []));
    let extra = calls.length ? ` calls [${calls.join(", ")}]` : "";
    if (ev.actions?.transferToAgent) extra += ` -> transfer to ${ev.actions.transferToAgent}`;
    console.log(`#${ev.sequence} ${ev.author}: ${textOf(ev)}${extra}`);
  }
  return complete;
}

async function main(): Promise<number> {
  try {
    const { session } = await sessions.createSession({ appName: app, userId: user }, { timeoutMs: 10_000 });
    if (!session) throw new Error("CreateSession returned no session");
    console.log(`session ${session.sessionId}`);
    const first = await run(session.sessionId, "Hello! What can you do?");
    const second = await run(session.sessionId, "Tell me more.");
    const arts = await artifacts.listArtifacts({ appName: app, userId: user, sessionId: session.sessionId });
    console.log(`artifacts: [${arts.artifacts.map((a) => a.filename).join(", ")}]`);
    const got = await sessions.getSession({ appName: app, userId: user, sessionId: session.sessionId });
    console.log(
      `stored events: ${got.events.length}; answered by: ${first.at(-1)?.author ?? "-"}, ${second.at(-1)?.author ?? "-"}`,
    );
    return 0;
  } catch (err) {
    const e = ConnectError.from(err);
    console.error(`RPC failed: ${Code[e.code]}: ${e.rawMessage}`);
    return 1;
  }
}

process.exitCode = await main();
