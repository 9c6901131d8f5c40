// Chat of one session: the conversation (oldest first, the composer at
// its foot, streamed text in place) beside the inspector (the timeline of
// every event, newest first, in full, with search). Both are windowed
// lists over the session's sequence (vlist.ts): only what is on screen is
// in the page, and events load page by page as they come into view, so
// a session of any length costs a screenful. A run the page starts
// streams its tokens (streaming_mode SSE); Stop cancels it on the server
// (CancelRun) and keeps what it had said. Runs other clients start on
// the session show up without a reload: a cheap poll (ListRuns of the
// active statuses, and ListEvents after the newest sequence) finds them,
// and AttachRun streams a running one. The view holds at most one stream.
import { Code } from "@connectrpc/connect";
import { RunnerService, RunRequestSchema, CancelRunRequestSchema, type RunResponse } from "../../../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import { SessionService, ListEventsRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import type { Event as PEvent } from "../../../../gen/ts/agentrunner/v1/event_pb.js";
import type { FunctionCall, Part } from "../../../../gen/ts/agentrunner/v1/content_pb.js";
import type { ToolInfo } from "../../../../gen/ts/agentrunner/v1/agent_pb.js";
import { OnDisconnect, RunStatus, StreamingMode, type Run } from "../../../../gen/ts/agentrunner/v1/run_pb.js";
import { activeStatuses, date, errCode, errText, isActive, pages, runner, sessions, statusName, tryOpenStream, shortId } from "../api.js";
import { h, replace } from "../dom.js";
import { showError } from "../ui.js";
import { rpcButton } from "../rpc.js";
import { eventCard, Pairs, updateRunTags } from "./events.js";
import { answerForm, type Answer } from "./answer.js";
import { VList } from "./vlist.js";
import { convoRow } from "./convo.js";
import { searchPanel } from "./search.js";

const firstPage = 40;
const pageSize = 100; // events a page of the lists loads
const maxCached = 4000; // events kept in memory; the farthest pages go
const pollMs = 1500;

export type SessionCtx = {
  app: string; user: string; sid: string; path: string; lastSequence: bigint; tools: Map<string, ToolInfo>;
  // progress tells the session's header of events as they come.
  progress?: (last: bigint, at: Date | undefined) => void;
};

type Stream = { runId: string; kind: "own" | "attached"; abort: AbortController };

export async function chatTab(root: HTMLElement, signal: AbortSignal, ctx: SessionCtx): Promise<void> {
  const c = new Chat(root, signal, ctx);
  await c.start();
}

class Chat {
  timeline = h("div#timeline.scroller");
  conversation = h("div#conversation.scroller");
  live = h("div#live");
  pending = h("div#pending");
  conn = h("div#conn");
  runState = h("span#run-state.hint");
  input = h("textarea#chat-input", { rows: 2, placeholder: "Message (Enter sends, Shift+Enter breaks the line)" }) as HTMLTextAreaElement;
  files = h("input#chat-files", { type: "file", multiple: true }) as HTMLInputElement;
  stopBtn = h("button#stop.danger", { type: "button", disabled: true }, "Stop") as HTMLButtonElement;
  pairs: Pairs;
  statuses = new Map<string, RunStatus>();
  cache = new Map<number, PEvent>();
  loading = new Set<number>(); // pages in flight
  newest = 0n;
  picked = 0; // the event the inspector shows marked
  stream: Stream | undefined;
  stopping = ""; // the run Stop cancelled, while its stream ends
  active: Run | undefined; // the session's active run, as last seen
  pendingKey = "";
  down = false;
  tl: VList;
  cv: VList;

  constructor(private root: HTMLElement, private signal: AbortSignal, private ctx: SessionCtx) {
    this.pairs = new Pairs(root);
    signal.addEventListener("abort", () => this.stream?.abort.abort());
    const need = (from: number, to: number) => this.need(from, to);
    this.tl = new VList(this.timeline, { order: "newest-first", estimate: 120, need, render: (seq) => this.card(seq) });
    this.cv = new VList(this.conversation, { order: "oldest-first", estimate: 56, need, render: (seq) => this.line(seq) });
    signal.addEventListener("abort", () => { this.tl.destroy(); this.cv.destroy(); });
  }

  card(seq: number): HTMLElement | null {
    const ev = this.cache.get(seq);
    if (!ev) return null;
    const c = eventCard(ev, this.pairs, this.statusOf, this.ctx.path);
    if (seq === this.picked) c.classList.add("picked");
    return c;
  }

  line(seq: number): HTMLElement | null {
    const ev = this.cache.get(seq);
    return ev ? convoRow(ev, this.pairs, this.statusOf, (s) => this.inspect(s)) : null;
  }

  // inspect shows event seq in the inspector, marked.
  inspect(seq: number): void {
    this.root.querySelector(".split")?.setAttribute("data-pane", "inspector");
    this.picked = seq;
    for (const el of this.timeline.querySelectorAll(".event.picked")) el.classList.remove("picked");
    this.timeline.querySelector(`article[data-seq="${seq}"]`)?.classList.add("picked");
    this.tl.scrollToSeq(seq);
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
    const pane = (p: string) => () => this.root.querySelector(".split")?.setAttribute("data-pane", p);
    replace(this.root,
      this.conn,
      this.pending,
      h("div.pane-switch", h("button#show-conversation", { type: "button", onclick: pane("conversation") }, "Conversation"), h("button#show-inspector", { type: "button", onclick: pane("inspector") }, "Inspector")),
      h("div.split", { "data-pane": "conversation" },
        h("section.pane.convo-pane",
          h("div.row.head", h("h3", "Conversation"), h("span.hint", " oldest first"), h("span.grow"), h("button#to-newest", { type: "button", title: "Newest (End)", onclick: () => this.cv.scrollToNewest() }, "↓")),
          this.conversation,
          this.live,
          h("form.composer", { onsubmit: (e: Event) => { e.preventDefault(); void this.sendMessage(); } },
            this.input,
            h("div.row", this.files, h("span.grow"), this.runState, this.stopBtn, send,
              rpcButton(RunnerService, "run", RunRequestSchema, () => this.runRequest([{ data: { case: "text", value: this.input.value } } as Part]), "RPC")))),
        h("section.pane.inspector-pane",
          searchPanel(this.ctx, this.signal, (seq) => this.inspect(seq)),
          h("div.row.head", h("h3", "Timeline"), h("span.hint", " newest first"), h("span.grow"),
            h("input#goto-seq", { type: "number", min: 1, placeholder: "go to #", size: 6, title: "Go to an event by its sequence", onchange: (e: Event) => this.tl.scrollToSeq(Number((e.target as HTMLInputElement).value)) }),
            rpcButton(SessionService, "listEvents", ListEventsRequestSchema, () => {
              const [a] = this.tl.visible();
              return { appName: app, userId: user, sessionId: sid, pageSize, afterSequence: BigInt(Math.max(0, a - 1)) };
            })),
          this.timeline)),
    );
    // The newest events first (GetSession's most recent), the others
    // as they come into view.
    const got = await sessions.getSession({ appName: app, userId: user, sessionId: sid, numRecentEvents: firstPage }, { signal: this.signal });
    await this.refreshRuns();
    this.addNewer(got.events, got.session?.lastSequence ?? 0n);
    this.tl.update();
    this.cv.scrollToNewest();
    await this.checkActive();
    const at = Number(new URLSearchParams(location.search).get("seq"));
    if (at > 0) this.inspect(at);
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

  // addNewer takes events as they are stored (the session's last
  // sequence is at least last), into both lists.
  addNewer(evs: PEvent[], last = 0n): void {
    let lo = Infinity;
    for (const ev of evs) {
      this.cache.set(Number(ev.sequence), ev);
      this.pairs.note(ev);
      if (ev.sequence > last) last = ev.sequence;
      lo = Math.min(lo, Number(ev.sequence));
    }
    if (last > this.newest) {
      this.newest = last;
      this.tl.setCount(Number(last));
      this.cv.setCount(Number(last));
      const at = evs.length ? date(evs[evs.length - 1].timestamp) : undefined;
      this.ctx.progress?.(last, at);
    }
    if (lo !== Infinity) {
      this.tl.refresh(lo);
      this.cv.refresh(lo);
    }
  }

  // need loads the pages of [from, to] the lists lack, a few at a time:
  // one scrolling fast asks again for what is then in view.
  need(from: number, to: number): void {
    for (let p = Math.floor((from - 1) / pageSize); p <= Math.floor((to - 1) / pageSize); p++) {
      if (this.loading.size >= 3) return;
      const first = p * pageSize + 1;
      const last = Math.min(first + pageSize - 1, Number(this.newest));
      let have = true;
      for (let s = Math.max(first, from); s <= Math.min(last, to); s++) if (!this.cache.has(s)) { have = false; break; }
      if (have || this.loading.has(p)) continue;
      this.loading.add(p);
      void this.loadPage(p, first, last);
    }
  }

  async loadPage(p: number, first: number, last: number): Promise<void> {
    const { app, user, sid } = this.ctx;
    try {
      const resp = await pages.listEvents({ appName: app, userId: user, sessionId: sid, pageSize, afterSequence: BigInt(first - 1) }, { signal: this.signal });
      for (const ev of resp.events) {
        this.cache.set(Number(ev.sequence), ev);
        this.pairs.note(ev);
      }
      this.evict();
      this.tl.refresh(first, last, true);
      this.cv.refresh(first, last, true);
    } catch (e) {
      if (!this.signal.aborted) showError(e);
    } finally {
      this.loading.delete(p);
    }
    if (!this.signal.aborted) {
      this.tl.schedule();
      this.cv.schedule();
    }
  }

  // evict drops the pages farthest from both views once the cache holds
  // more than maxCached events.
  evict(): void {
    if (this.cache.size <= maxCached) return;
    const [a] = this.tl.visible();
    const [b] = this.cv.visible();
    const dist = (s: number) => Math.min(Math.abs(s - a), Math.abs(s - b), Number(this.newest) - s < firstPage ? 0 : Infinity);
    const seqs = [...this.cache.keys()].sort((x, y) => dist(y) - dist(x));
    for (const s of seqs.slice(0, this.cache.size - maxCached / 2)) this.cache.delete(s);
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
    if (r.status === RunStatus.CANCELLED) this.cv.refresh();
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

  // fetchNewer adds the events stored after the newest shown; it returns
  // how many, and whether more are stored.
  async fetchNewer(): Promise<[PEvent[], boolean]> {
    const { app, user, sid } = this.ctx;
    const resp = await pages.listEvents({ appName: app, userId: user, sessionId: sid, pageSize: 200, afterSequence: this.newest }, { signal: this.signal });
    const fresh = resp.events.filter((e) => e.sequence > this.newest);
    this.addNewer(fresh);
    return [fresh, resp.nextPageToken !== ""];
  }

  poll(): void {
    const tick = async () => {
      if (this.signal.aborted) return;
      try {
        const [fresh, more] = await this.fetchNewer();
        if (this.down) {
          this.down = false;
          replace(this.conn, h("div.banner.ok#reconnected", `Reconnected. ${fresh.length}${more ? "+" : ""} event${fresh.length === 1 ? "" : "s"} stored while the console was cut off ${fresh.length ? "are now shown" : "(none missed)"}.`));
        }
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
    this.cv.scrollToNewest();
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
      // A run Stop cancelled ends its stream CANCELED: that is the
      // answer asked for, not a failure.
      if (!abort.signal.aborted && !(this.stopping && errCode(e) === Code.Canceled)) showError(e);
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

  // afterStream ends what the stream showed. After a Stop the streamed
  // text stays, marked stopped, until the event the server stored of it
  // is in the lists.
  async afterStream(): Promise<void> {
    if (this.signal.aborted) return;
    try {
      if (this.stopping) {
        this.live.querySelector(".live-head .tag")?.replaceWith(h("span.tag.warn", "stopped"));
        this.live.querySelector("#live-text")?.classList.remove("streaming");
        const [fresh] = await this.fetchNewer();
        // The stored stop event now shows what was said; a run that ended
        // on its own before the cancel stored its whole answer instead.
        if (fresh.some((e) => e.interrupted) || this.statuses.get(this.stopping) !== RunStatus.CANCELLED) this.live.replaceChildren();
        this.stopping = "";
      } else {
        this.live.replaceChildren();
      }
      await this.checkActive();
    } catch (e) {
      showError(e);
    }
  }

  // consume shows a Run, AttachRun or ResumeRun stream: partial text in
  // the live box as it comes, complete events into the lists.
  async consume(stream: AsyncIterable<RunResponse>): Promise<void> {
    let text = h("div#live-text.text.streaming");
    let author = "";
    for await (const resp of stream) {
      const p = resp.payload;
      if (p.case === "run") {
        if (this.stream && !this.stream.runId) this.stream.runId = p.value.runId;
        this.setActive(p.value);
      } else if (p.case === "error") {
        if (!this.stopping) this.live.append(h("div.error-text.inband", `agent error ${p.value.code}: ${p.value.message}`));
      } else if (p.case === "event") {
        const ev = p.value;
        if (ev.partial) {
          if (ev.author !== author || !text.isConnected) {
            author = ev.author;
            text = h("div#live-text.text.streaming");
            replace(this.live, h("div.live-head", h("b", ev.author), h("span.tag", "streaming")), text);
          }
          for (const part of ev.content?.parts ?? []) if (part.data.case === "text") text.append(part.data.value);
          if (this.cv.visible()[1] >= Number(this.newest)) this.live.scrollIntoView({ block: "nearest" });
        } else {
          if (!this.stopping || ev.interrupted) this.live.replaceChildren();
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
    this.stopping = id;
    try {
      const resp = await runner.cancelRun({ runId: id });
      this.setActive(resp.run);
      if (!this.stream) await this.afterStream();
    } catch (e) {
      this.stopping = "";
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
