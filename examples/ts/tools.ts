// agentrunner from TypeScript with a tool the client executes: the agent's
// get_order calls run here.
//
// Usage: npx tsx examples/ts/tools.ts [--addr 127.0.0.1:50051] [--app orders] [--user U] [MESSAGE ...]
// (and --token-file, --ca-file, --cert-file, --key-file as client.ts takes them)
//
// The app declares get_order in its apps file (function_tools, with a JSON
// Schema). When the model calls it, the run ends with the call's id in the
// event's longRunningToolIds; this client looks the order up and answers
// with a Run whose message holds a functionResponse for every waiting call,
// until a run ends with nothing to wait on.
import { ConnectError, createClient } from "@connectrpc/connect";
import { transport as makeTransport } from "./transport.js";
import type { JsonObject } from "@bufbuild/protobuf";
import { SessionService } from "../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import { RunnerService } from "../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import type { FunctionCall, Part } from "../../gen/ts/agentrunner/v1/content_pb.js";

const flags = new Map<string, string>();
const messages: string[] = [];
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a.startsWith("--") && i + 1 < process.argv.length) flags.set(a.slice(2), process.argv[++i]);
  else messages.push(a);
}
const addr = flags.get("addr") ?? process.env.AGENTRUNNER_ADDR ?? "127.0.0.1:50051";
const app = flags.get("app") ?? "orders";
const user = flags.get("user") ?? "ts-tools";
if (messages.length === 0) messages.push('Where is my order? call get_order {"order_id": "42"}');

// The client's own order system.
const orders: Record<string, JsonObject> = { "42": { status: "shipped", carrier: "DHL" }, "7": { status: "packing" } };
const tools: Record<string, (args: JsonObject) => JsonObject> = {
  get_order: (args) => orders[String(args.order_id)] ?? { error: `no order '${String(args.order_id)}'` },
};

const transport = makeTransport(addr, flags);
const sessions = createClient(SessionService, transport);
const runner = createClient(RunnerService, transport);

// run sends one message, prints the events and returns the calls the run
// waits on.
async function run(sessionId: string, parts: Part[]): Promise<FunctionCall[]> {
  const waiting: FunctionCall[] = [];
  const stream = runner.run({ appName: app, userId: user, sessionId, newMessage: { role: "user", parts } }, { timeoutMs: 30_000 });
  for await (const resp of stream) {
    if (resp.payload.case === "error") {
      console.log(`[agent error ${resp.payload.value.code}] ${resp.payload.value.message}`);
      continue;
    }
    if (resp.payload.case !== "event") continue;
    const ev = resp.payload.value;
    for (const p of ev.content?.parts ?? []) {
      if (p.data.case === "text") console.log(`#${ev.sequence} ${ev.author}: ${p.data.value}`);
      if (p.data.case === "functionCall") {
        const fc = p.data.value;
        const wait = ev.longRunningToolIds.includes(fc.id);
        console.log(`#${ev.sequence} ${ev.author}: calls ${fc.name} ${JSON.stringify(fc.args ?? {})}${wait ? " (waits for us)" : ""}`);
        if (wait) waiting.push(fc);
      }
      if (p.data.case === "functionResponse") {
        console.log(`#${ev.sequence} ${ev.author}: ${p.data.value.name} returned ${JSON.stringify(p.data.value.response ?? {})}`);
      }
    }
  }
  return waiting;
}

// answer executes the calls here and returns the parts that answer them.
function answer(calls: FunctionCall[]): Part[] {
  return calls.map((fc) => {
    const result = tools[fc.name](fc.args ?? {});
    console.log(`  (client ran ${fc.name} -> ${JSON.stringify(result)})`);
    return { data: { case: "functionResponse", value: { id: fc.id, name: fc.name, response: result } } } as Part;
  });
}

async function main(): Promise<number> {
  try {
    const sess = (await sessions.createSession({ appName: app, userId: user }, { timeoutMs: 10_000 })).session!;
    console.log(`session ${sess.sessionId}`);
    for (const text of messages) {
      let parts: Part[] = [{ data: { case: "text", value: text } } as Part];
      for (let i = 0; i < 10; i++) {
        // bounded: a model could call tools forever
        const waiting = await run(sess.sessionId, parts);
        if (waiting.length === 0) break;
        parts = answer(waiting);
      }
    }
  } catch (e) {
    const err = ConnectError.from(e);
    console.error(`RPC failed: ${err.code}: ${err.rawMessage}`);
    return 1;
  }
  return 0;
}

process.exit(await main());
