// Chat and timeline of one session. Newest events first; older ones load
// page by page as one scrolls, so a long session never loads whole. A run
// the page starts streams its tokens (streaming_mode SSE); Stop cancels it
// on the server (CancelRun). Runs other clients start on the session show
// up without a reload: a cheap poll (ListRuns of the active statuses, and
// ListEvents after the newest sequence) finds them, and AttachRun streams
// a running one. The view holds at most one stream.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { RunnerService, RunRequestSchema, CancelRunRequestSchema, type RunResponse } from "../../../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import { SessionService, ListEventsRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import type { Event as PEvent } from "../../../../gen/ts/agentrunner/v1/event_pb.js";
import type { FunctionCall, Part } from "../../../../gen/ts/agentrunner/v1/content_pb.js";
import type { ToolInfo } from "../../../../gen/ts/agentrunner/v1/agent_pb.js";
import { OnDisconnect, RunStatus, StreamingMode, type Run } from "../../../../gen/ts/agentrunner/v1/run_pb.js";
import { activeStatuses, errCode, errText, isActive, runner, sessions, statusName, tryOpenStream, shortId } from "../api.js";
import { h, replace } from "../dom.js";
import { showError } from "../ui.js";
import { rpcButton } from "../rpc.js";
import { eventCard, Pairs, updateRunTags } from "./events.js";
import { answerForm, type Answer } from "./answer.js";

const pageSize = 40;
const pollMs = 1500;

export type SessionCtx = { app: string; user: string; sid: string; path: string; lastSequence: bigint; tools: Map<string, ToolInfo> };

type Stream = { runId: string; kind: "own" | "attached"; abort: AbortController };

export async function chatTab(root: HTMLElement, signal: AbortSignal, ctx: SessionCtx): Promise<void> {
  const c = new Chat(root, signal, ctx);
  await c.start();
}

class Chat {
  timeline = h("div#timeline");
  live = h("div#live");
  pending = h("div#pending");
  conn = h("div#conn");
  runState = h("span#run-state.hint");
  older = h("button#load-older", { type: "button" }, "Load older events") as HTMLButtonElement;
  input = h("textarea#chat-input", { rows: 2, placeholder: "Message (Enter sends, Shift+Enter breaks the line)" }) as HTMLTextAreaElement;
  files = h("input#chat-files", { type: "file", multiple: true }) as HTMLInputElement;
  stopBtn = h("button#stop.danger", { type: "button", disabled: true }, "Stop") as HTMLButtonElement;
  pairs = new Pairs(this.timeline);
  statuses = new Map<string, RunStatus>();
  seen = new Set<bigint>();
  oldest = 0n; // smallest sequence loaded; 0 before any
  newest = 0n;
  stream: Stream | undefined;
  active: Run | undefined; // the session's active run, as last seen
  pendingKey = "";
  down = false;

  constructor(private root: HTMLElement, private signal: AbortSignal, private ctx: SessionCtx) {
    signal.addEventListener("abort", () => this.stream?.abort.abort());
  }

  async start(): Promise<void> {
    const { app, user, sid } = this.ctx;
    const send = h("button#send", { type: "submit" }, "Send");
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        (send as HTMLButtonElement).click();
      }
    });
    this.stopBtn.addEventListener("click", () => void this.stop());
    this.older.addEventListener("click", () => void this.loadOlder().catch((e) => showError(e)));
    replace(this.root,
      this.conn,
      h("form.composer", { onsubmit: (e: Event) => { e.preventDefault(); void this.sendMessage(); } },
        this.input,
        h("div.row", this.files, h("span.grow"), this.runState, this.stopBtn, send,
          rpcButton(RunnerService, "run", RunRequestSchema, () => this.runRequest([{ data: { case: "text", value: this.input.value } } as Part]), "RPC"))),
      this.pending,
      this.live,
      h("div.row.head", h("h3", "Timeline"), h("span.hint", " newest first"), h("span.grow"),
        rpcButton(SessionService, "listEvents", ListEventsRequestSchema, () => ({ appName: app, userId: user, sessionId: sid, pageSize, afterSequence: this.oldest > BigInt(pageSize) ? this.oldest - BigInt(pageSize) - 1n : 0n }))),
      this.timeline,
      this.older,
    );
    // The newest page first (GetSession's most recent events), older
    // pages when the bottom of the timeline comes into view.
    const got = await sessions.getSession({ appName: app, userId: user, sessionId: sid, numRecentEvents: pageSize }, { signal: this.signal });
    await this.refreshRuns();
    this.addNewer(got.events);
    this.older.hidden = this.oldest <= 1n;
    const io = new IntersectionObserver((es) => {
      if (es.some((e) => e.isIntersecting) && !this.older.hidden && !this.older.disabled) this.older.click();
    });
    io.observe(this.older);
    this.signal.addEventListener("abort", () => io.disconnect());
    await this.checkActive();
    this.timeline.dataset.loaded = "1";
    this.poll();
  }

  runRequest(parts: Part[]) {
    const { app, user, sid } = this.ctx;
    // ON_DISCONNECT_CONTINUE: leaving the view or closing the tab does not
    // cancel the run (the runs board and this view find it again); Stop
    // does, with CancelRun.
    return { appName: app, userId: user, sessionId: sid, newMessage: { role: "user", parts }, runConfig: { streamingMode: StreamingMode.SSE, streamUserEvent: true }, onDisconnect: OnDisconnect.CONTINUE };
  }

  statusOf = (id: string) => this.statuses.get(id);

  // addNewer puts events newer than what is shown at the top.
  addNewer(evs: PEvent[]): void {
    for (const ev of evs) {
      if (this.seen.has(ev.sequence)) continue;
      this.seen.add(ev.sequence);
      this.pairs.note(ev);
      this.timeline.prepend(eventCard(ev, this.pairs, this.statusOf, this.ctx.path));
      if (ev.sequence > this.newest) this.newest = ev.sequence;
      if (!this.oldest || ev.sequence < this.oldest) this.oldest = ev.sequence;
    }
  }

  async loadOlder(): Promise<void> {
    if (this.oldest <= 1n) return;
    this.older.disabled = true;
    try {
      const from = this.oldest > BigInt(pageSize) ? this.oldest - BigInt(pageSize) - 1n : 0n;
      const { app, user, sid } = this.ctx;
      const resp = await sessions.listEvents({ appName: app, userId: user, sessionId: sid, pageSize, afterSequence: from }, { signal: this.signal });
      const evs = resp.events.filter((e) => e.sequence < this.oldest && !this.seen.has(e.sequence));
      for (const ev of evs) this.pairs.note(ev);
      for (const ev of evs.reverse()) {
        this.seen.add(ev.sequence);
        this.timeline.append(eventCard(ev, this.pairs, this.statusOf, this.ctx.path));
        this.oldest = ev.sequence;
      }
      if (evs.length === 0) this.oldest = 1n;
      this.older.hidden = this.oldest <= 1n;
    } finally {
      this.older.disabled = false;
    }
  }

  async refreshRuns(): Promise<Run[]> {
    const { app, user, sid } = this.ctx;
    const resp = await runner.listRuns({ appName: app, userId: user, sessionId: sid, pageSize: 20 }, { signal: this.signal });
    for (const r of resp.runs) this.noteStatus(r);
    return resp.runs;
  }

  setActive(r: Run | undefined): void {
    this.active = r && isActive(r.status) ? r : undefined;
    const running = this.active && this.active.status !== RunStatus.INPUT_REQUIRED;
    this.stopBtn.disabled = !running;
    this.runState.textContent = this.active ? `run ${shortId(this.active.runId)} ${statusName(this.active.status)}` : "";
    this.runState.dataset.status = this.active ? statusName(this.active.status) : "";
    if (r) this.runState.dataset.runId = r.runId;
    if (r) this.runState.dataset.last = statusName(r.status);
    if (r) this.noteStatus(r);
  }

  noteStatus(r: Run): void {
    if (this.statuses.get(r.runId) === r.status) return;
    this.statuses.set(r.runId, r.status);
    updateRunTags(this.timeline, r.runId, r.status);
  }

  // checkActive looks for the session's active run: attaches to a running
  // one some other client started, and offers to answer one that waits.
  async checkActive(): Promise<void> {
    const { app, user, sid } = this.ctx;
    const resp = await runner.listRuns({ appName: app, userId: user, sessionId: sid, pageSize: 5, statuses: activeStatuses }, { signal: this.signal });
    const run = resp.runs.find((r) => r.status === RunStatus.RUNNING) ?? resp.runs.find((r) => r.status === RunStatus.PENDING) ?? resp.runs[0];
    if (this.stream) return;
    this.setActive(run);
    if (run && run.status !== RunStatus.INPUT_REQUIRED) void this.attach(run);
    await this.showPending(run?.status === RunStatus.INPUT_REQUIRED ? run : undefined);
  }

  poll(): void {
    const tick = async () => {
      if (this.signal.aborted) return;
      try {
        const { app, user, sid } = this.ctx;
        const resp = await sessions.listEvents({ appName: app, userId: user, sessionId: sid, pageSize: 200, afterSequence: this.newest }, { signal: this.signal });
        const fresh = resp.events.filter((e) => !this.seen.has(e.sequence));
        if (this.down) {
          this.down = false;
          replace(this.conn, h("div.banner.ok#reconnected", `Reconnected. ${fresh.length}${resp.nextPageToken ? "+" : ""} event${fresh.length === 1 ? "" : "s"} stored while the console was cut off ${fresh.length ? "are now at the top" : "(none missed)"}.`));
        }
        this.addNewer(fresh);
        await this.refreshRuns();
        if (!this.stream) await this.checkActive();
      } catch (e) {
        if (this.signal.aborted) return;
        if (!this.down) {
          this.down = true;
          replace(this.conn, h("div.banner.bad#disconnected", `Lost the server (${errText(e)}); retrying every ${pollMs / 1000}s.`));
        }
        if (errCode(e) === Code.Unauthenticated || errCode(e) === Code.PermissionDenied) showError(e);
      }
      if (!this.signal.aborted) setTimeout(tick, pollMs);
    };
    setTimeout(tick, pollMs);
  }

  async sendMessage(): Promise<void> {
    const parts: Part[] = [];
    if (this.input.value.trim()) parts.push({ data: { case: "text", value: this.input.value } } as Part);
    for (const f of Array.from(this.files.files ?? [])) {
      parts.push({ data: { case: "inlineData", value: { mimeType: f.type || "application/octet-stream", data: new Uint8Array(await f.arrayBuffer()), displayName: f.name } } } as Part);
    }
    if (!parts.length) return;
    this.input.value = "";
    this.files.value = "";
    await this.run(parts);
  }

  // run starts a run on this session and streams it here.
  async run(parts: Part[]): Promise<void> {
    if (this.stream?.kind === "attached") this.stream.abort.abort();
    const release = tryOpenStream();
    if (!release) {
      showError(new Error("two streams are already open in this tab; close another view's stream first"));
      return;
    }
    const abort = new AbortController();
    this.stream = { runId: "", kind: "own", abort };
    try {
      await this.consume(runner.run(this.runRequest(parts), { signal: abort.signal }));
    } catch (e) {
      if (!abort.signal.aborted) showError(e);
    } finally {
      release();
      this.stream = undefined;
      await this.afterStream();
    }
  }

  async attach(run: Run): Promise<void> {
    const release = tryOpenStream();
    if (!release) return; // the poll keeps the view current without it
    const abort = new AbortController();
    this.stream = { runId: run.runId, kind: "attached", abort };
    replace(this.live, h("div.hint#attached", `Following run ${shortId(run.runId)}, started elsewhere…`));
    try {
      await this.consume(runner.attachRun({ runId: run.runId, afterSequence: this.newest }, { signal: abort.signal }));
    } catch (e) {
      if (!abort.signal.aborted && !this.signal.aborted) console.warn("attach:", e);
    } finally {
      release();
      if (this.stream?.abort === abort) this.stream = undefined;
      await this.afterStream();
    }
  }

  async afterStream(): Promise<void> {
    this.live.replaceChildren();
    if (this.signal.aborted) return;
    try {
      await this.checkActive();
    } catch (e) {
      showError(e);
    }
  }

  // consume shows a Run, AttachRun or ResumeRun stream: partial text in
  // the live box as it comes, complete events into the timeline.
  async consume(stream: AsyncIterable<RunResponse>): Promise<void> {
    let text = h("div#live-text.text.streaming");
    let author = "";
    for await (const resp of stream) {
      const p = resp.payload;
      if (p.case === "run") {
        if (this.stream && !this.stream.runId) this.stream.runId = p.value.runId;
        this.setActive(p.value);
      } else if (p.case === "error") {
        this.live.append(h("div.error-text.inband", `agent error ${p.value.code}: ${p.value.message}`));
      } else if (p.case === "event") {
        const ev = p.value;
        if (ev.partial) {
          if (ev.author !== author || !text.isConnected) {
            author = ev.author;
            text = h("div#live-text.text.streaming");
            replace(this.live, h("div.live-head", h("b", ev.author), h("span.tag", "streaming")), text);
          }
          for (const part of ev.content?.parts ?? []) if (part.data.case === "text") text.append(part.data.value);
        } else {
          this.live.replaceChildren();
          author = "";
          this.addNewer([ev]);
        }
      }
    }
  }

  async stop(): Promise<void> {
    const id = this.stream?.runId || this.active?.runId;
    if (!id) return;
    this.stopBtn.disabled = true;
    try {
      const resp = await runner.cancelRun({ runId: id });
      this.setActive(resp.run);
    } catch (e) {
      showError(e);
    }
  }

  // showPending offers an answer to every call an INPUT_REQUIRED run
  // waits on; all of them go back in one Run, as the server requires.
  async showPending(run: Run | undefined): Promise<void> {
    const key = run ? run.runId + run.pendingCallIds.join(",") : "";
    if (key === this.pendingKey) return;
    this.pendingKey = key;
    if (!run) {
      this.pending.replaceChildren();
      return;
    }
    const calls = await this.findCalls(run);
    const answers = new Map<string, Answer>();
    const sendAll = () => {
      if (answers.size < calls.length) return;
      const parts = calls.map((fc) => ({ data: { case: "functionResponse", value: { id: fc.id, name: fc.name, response: answers.get(fc.id)!.response } } }) as Part);
      this.pending.replaceChildren(h("p.hint", "Answer sent."));
      this.pendingKey = "";
      void this.run(parts);
    };
    replace(this.pending,
      h("section.card.pending",
        h("div.row.head", h("h3", `Run ${shortId(run.runId)} waits on ${calls.length} call${calls.length === 1 ? "" : "s"}`), h("span.grow"),
          rpcButton(RunnerService, "run", RunRequestSchema, () => this.runRequest(calls.map((fc) => ({ data: { case: "functionResponse", value: { id: fc.id, name: fc.name, response: answers.get(fc.id)?.response ?? {} } } }) as Part)), "RPC"),
          rpcButton(RunnerService, "cancelRun", CancelRunRequestSchema, () => ({ runId: run.runId }), "RPC: cancel")),
        calls.map((fc) => answerForm(fc, this.ctx.tools, (a) => {
          answers.set(fc.id, a);
          sendAll();
        }))));
  }

  async findCalls(run: Run): Promise<FunctionCall[]> {
    const missing = () => run.pendingCallIds.filter((id) => !this.pairs.calls.has(id));
    if (missing().length && run.firstSequence > 0n) {
      const { app, user, sid } = this.ctx;
      let token = "";
      // Bounded: a run's events are a range of the session's sequence.
      for (let i = 0; i < 50 && missing().length; i++) {
        const resp = await sessions.listEvents({ appName: app, userId: user, sessionId: sid, pageSize: 500, afterSequence: run.firstSequence - 1n, pageToken: token }, { signal: this.signal });
        for (const ev of resp.events) this.pairs.note(ev);
        token = resp.nextPageToken;
        if (!token) break;
      }
    }
    return run.pendingCallIds.map((id) => this.pairs.calls.get(id) ?? ({ id, name: "", args: {} } as unknown as FunctionCall));
  }
}

export function asObject(v: JsonValue): JsonObject {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v : { result: v };
}
