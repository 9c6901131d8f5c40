// agentrunner from TypeScript (Node 20, Connect-ES over gRPC): create a
// session, run two messages, list artifacts.
//
// Usage: npx tsx examples/ts/client.ts [--addr 127.0.0.1:50051] [--app demo] [--user U] [MESSAGE ...]
//
// Against a server with authentication (docs/security.md):
// --token-file FILE (or env AGENTRUNNER_TOKEN) sends a bearer token,
// --ca-file CA.pem turns TLS on, --cert-file and --key-file add a client
// certificate (mTLS).
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { transport as makeTransport } from "./transport.js";
import { SessionService } from "../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import { RunnerService } from "../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import { ArtifactService } from "../../gen/ts/agentrunner/service/v1/artifact_service_pb.js";
import type { Event } from "../../gen/ts/agentrunner/v1/event_pb.js";
import { StreamingMode } from "../../gen/ts/agentrunner/v1/run_pb.js";

// Flags are --name value; the other arguments are the messages to send.
const flags = new Map<string, string>();
const messages: string[] = [];
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a.startsWith("--") && i + 1 < process.argv.length) flags.set(a.slice(2), process.argv[++i]);
  else messages.push(a);
}
const addr = flags.get("addr") ?? process.env.AGENTRUNNER_ADDR ?? "127.0.0.1:50051";
const app = flags.get("app") ?? "demo";
const user = flags.get("user") ?? "ts-example";
if (messages.length === 0) messages.push("Hello! What can you do?", "Tell me more.");

const transport = makeTransport(addr, flags);
const sessions = createClient(SessionService, transport);
const runner = createClient(RunnerService, transport);
const artifacts = createClient(ArtifactService, transport);

function textOf(ev: Event): string {
  return (ev.content?.parts ?? [])
    .map((p) => (p.data.case === "text" && !p.thought ? p.data.value : ""))
    .join("");
}

// run sends one message and prints the stream; it returns the authors of
// the complete events.
async function run(sessionId: string, text: string): Promise<string[]> {
  const authors: string[] = [];
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
    const ev = resp.payload.case === "event" ? resp.payload.value : undefined;
    if (streaming && !ev?.partial) {
      process.stdout.write("\n");
      streaming = false;
    }
    if (resp.payload.case === "error") {
      // An agent failed; the run goes on.
      console.log(`[agent error ${Code[resp.payload.value.code] ?? resp.payload.value.code}] ${resp.payload.value.message}`);
      continue;
    }
    if (!ev) continue;
    if (ev.partial) {
      // Streamed text; the complete event follows.
      if (!streaming) process.stdout.write(`${ev.author} (streaming): `);
      process.stdout.write(textOf(ev));
      streaming = true;
      continue;
    }
    authors.push(ev.author);
    const parts = ev.content?.parts ?? [];
    const shown = [textOf(ev)].filter((t) => t !== "");
    for (const p of parts) if (p.data.case === "functionCall") shown.push(`calls ${p.data.value.name}`);
    for (const p of parts) if (p.data.case === "functionResponse") shown.push(`${p.data.value.name} returned`);
    if (ev.actions?.transferToAgent) shown.push(`-> transfer to ${ev.actions.transferToAgent}`);
    // The model or a tool failed; the event says how.
    if (ev.errorCode) shown.push(`[${ev.errorCode}] ${ev.errorMessage}`);
    console.log(`#${ev.sequence} ${ev.author}: ${shown.join(" ")}`);
  }
  if (streaming) process.stdout.write("\n");
  return authors;
}

async function main(): Promise<number> {
  try {
    const { session } = await sessions.createSession({ appName: app, userId: user }, { timeoutMs: 10_000 });
    if (!session) throw new Error("CreateSession returned no session");
    console.log(`session ${session.sessionId}`);
    // The first author of each run is the agent the runner chose to answer.
    const answered: string[] = [];
    for (const msg of messages) answered.push((await run(session.sessionId, msg))[0] ?? "-");
    const arts = await artifacts.listArtifacts({ appName: app, userId: user, sessionId: session.sessionId });
    console.log(`artifacts: [${arts.artifacts.map((a) => a.filename).join(", ")}]`);
    const got = await sessions.getSession({ appName: app, userId: user, sessionId: session.sessionId });
    console.log(`stored events: ${got.events.length}; answered by: ${answered.join(", ")}`);
    return 0;
  } catch (err) {
    const e = ConnectError.from(err);
    console.error(`RPC failed: ${Code[e.code]}: ${e.rawMessage}`);
    return 1;
  }
}

process.exitCode = await main();
