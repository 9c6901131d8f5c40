// The trace of a run: a waterfall of its steps (the run, agents' turns,
// model calls with their time to first chunk, tool calls, transfers,
// parallel branches side by side, remote agents, calls waiting for input),
// each bar with its duration, tokens and cost; a click shows the step and
// links to its events. The spans come from GetRunTrace, named as the
// OpenTelemetry spans the server exports, so a collector shows the same.
import "./trace.css";
import { RunnerService, GetRunTraceRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import { AgentKind } from "../../../../gen/ts/agentrunner/v1/agent_pb.js";
import { TraceSpanKind, type TraceSpan } from "../../../../gen/ts/agentrunner/v1/trace_pb.js";
import type { Run } from "../../../../gen/ts/agentrunner/v1/run_pb.js";
import type { Duration, Timestamp } from "@bufbuild/protobuf/wkt";
import { fmtCost, fmtTokens, runner } from "../api.js";
import { h, replace } from "../dom.js";
import { section } from "../ui.js";
import { rpcButton } from "../rpc.js";

export function tsMs(t: Timestamp | undefined): number {
  return t ? Number(t.seconds) * 1000 + t.nanos / 1e6 : 0;
}

export function durMs(d: Duration | undefined): number {
  return d ? Number(d.seconds) * 1000 + d.nanos / 1e6 : 0;
}

// fmtMs prints a duration readably, down to microseconds.
export function fmtMs(ms: number): string {
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 1) return `${ms.toFixed(ms >= 100 ? 0 : 1)} ms`;
  return `${(ms * 1000).toFixed(0)} µs`;
}

const kindClass: Record<number, string> = {
  [TraceSpanKind.RUN]: "run",
  [TraceSpanKind.AGENT]: "agent",
  [TraceSpanKind.MODEL_CALL]: "model",
  [TraceSpanKind.TOOL_CALL]: "tool",
};

// ordered lists the spans depth first, children by start time, with
// their depth.
function ordered(spans: TraceSpan[]): [TraceSpan, number][] {
  const kids = new Map<string, TraceSpan[]>();
  for (const s of spans) {
    const k = kids.get(s.parentSpanId) ?? [];
    k.push(s);
    kids.set(s.parentSpanId, k);
  }
  const out: [TraceSpan, number][] = [];
  const walk = (parent: string, depth: number) => {
    const k = (kids.get(parent) ?? []).sort((a, b) => tsMs(a.startTime) - tsMs(b.startTime));
    for (const s of k) {
      out.push([s, depth]);
      walk(s.spanId, depth + 1);
    }
  };
  walk("", 0);
  return out;
}

function agentKind(s: TraceSpan): string {
  if (s.kind !== TraceSpanKind.AGENT) return "";
  return (AgentKind[s.agentKind] ?? "").replace(/^AGENT_KIND_/, "").toLowerCase().replace("_a2a", "");
}

// label says what a bar is, beyond its name.
function facts(s: TraceSpan, ms: number): string[] {
  const f = [fmtMs(ms)];
  if (s.timeToFirstChunk) f.push(`first chunk ${fmtMs(durMs(s.timeToFirstChunk))}`);
  if (s.usage?.totalTokenCount) f.push(`${s.usage.totalTokenCount} tok`);
  const cost = fmtCost(s.cost);
  if (cost) f.push(cost);
  if (s.transferToAgent) f.push(`→ ${s.transferToAgent}`);
  if (s.waiting) f.push("waiting for input");
  else if (s.open) f.push("running");
  if (s.errorCode) f.push(s.errorCode);
  return f;
}

// TraceView draws one run's trace and redraws it on refresh.
export class TraceView {
  readonly el: HTMLElement;
  private readonly chart = h("div#trace-chart.trace-chart");
  private readonly detail = h("div#trace-detail.trace-detail");
  private chosen = "";
  private spans: TraceSpan[] = [];
  private running: Promise<void> | undefined;
  private again = false;

  // onDraw, when given, sees each trace drawn (the agent graph follows it).
  constructor(private readonly runId: string, private readonly signal: AbortSignal, private readonly onDraw?: (spans: TraceSpan[]) => void) {
    this.el = section("Trace", [rpcButton(RunnerService, "getRunTrace", GetRunTraceRequestSchema, () => ({ runId }), "RPC: trace")],
      h("p.hint", "Each bar is a step of the run on the runner's clock: agents' turns, model calls (the darker part is the wait for the first chunk), tool calls. Click a bar for its events."),
      this.chart, this.detail);
  }

  // refresh fetches the trace again; calls while one is under way make
  // one more after it, so a burst of events costs two calls.
  refresh(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          const resp = await runner.getRunTrace({ runId: this.runId }, { signal: this.signal });
          this.draw(resp.spans, resp.run, resp.truncated);
        } while (this.again && !this.signal.aborted);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private draw(spans: TraceSpan[], run: Run | undefined, truncated: boolean): void {
    this.spans = spans;
    this.onDraw?.(spans);
    if (!spans.length) {
      replace(this.chart, h("p.hint", "No steps yet."));
      return;
    }
    const t0 = tsMs(spans[0].startTime);
    const now = Date.now();
    const endOf = (s: TraceSpan) => (s.open && !run?.endTime ? Math.max(tsMs(s.startTime) + durMs(s.duration), now) : tsMs(s.startTime) + durMs(s.duration));
    const total = Math.max(...spans.map((s) => endOf(s) - t0), 0.001);
    const pct = (ms: number) => `${Math.min(100, Math.max(0, (ms / total) * 100)).toFixed(3)}%`;
    const rows = ordered(spans).map(([s, depth]) => {
      const start = tsMs(s.startTime) - t0;
      const ms = endOf(s) - tsMs(s.startTime);
      const ttft = durMs(s.timeToFirstChunk);
      const cls = `${kindClass[s.kind] ?? ""}${s.open ? ".open" : ""}${s.waiting ? ".waiting" : ""}${s.errorCode ? ".failed" : ""}${s.spanId === this.chosen ? ".chosen" : ""}`;
      return h(`div.trace-row.${cls}`, {
        "data-span": s.spanId, "data-name": s.name, "data-kind": kindClass[s.kind] ?? "",
        "data-start-ms": start.toFixed(3), "data-duration-ms": durMs(s.duration).toFixed(3), "data-ttft-ms": s.timeToFirstChunk ? ttft.toFixed(3) : undefined,
        "data-agent": s.agentName, "data-branch": s.branch || undefined, tabindex: 0, role: "button",
        onclick: () => this.choose(s.spanId),
        onkeydown: (e: KeyboardEvent) => { if (e.key === "Enter") this.choose(s.spanId); },
      },
      indent(h("div.trace-label", { title: s.name },
        h("span.trace-name", s.name), agentKind(s) ? h("span.tag", agentKind(s)) : null, s.branch && s.kind === TraceSpanKind.AGENT ? h("span.tag.branch", s.branch) : null), depth),
      h("div.trace-track", bar(pct(start), pct(ms), ttft > 0 && ms > 0 ? `${Math.min(100, (ttft / ms) * 100).toFixed(2)}%` : ""),
        h("span.trace-facts", facts(s, ms).join(" · "))));
    });
    this.chart.dataset.totalMs = total.toFixed(3);
    replace(this.chart,
      h("div.trace-axis", h("span", "0"), h("span.grow"), h("span", fmtMs(total))),
      rows,
      truncated ? h("p.hint", "The run has more events than a trace draws; these are its first.") : null);
    if (this.chosen) this.showDetail();
  }

  private choose(id: string): void {
    this.chosen = id;
    for (const r of this.chart.querySelectorAll(".trace-row")) r.classList.toggle("chosen", (r as HTMLElement).dataset.span === id);
    this.showDetail();
  }

  private showDetail(): void {
    const s = this.spans.find((x) => x.spanId === this.chosen);
    if (!s) {
      this.detail.replaceChildren();
      return;
    }
    const row = (k: string, v: unknown) => (v === "" || v === undefined ? null : h("tr", h("td", k), h("td", String(v))));
    replace(this.detail,
      h("h3", s.name),
      h("table.kv",
        row("agent", s.agentName), row("branch", s.branch), row("model", s.model), row("tool", s.toolName), row("call id", s.callId),
        row("transferred to", s.transferToAgent),
        row("started", s.startTime ? new Date(tsMs(s.startTime)).toISOString() : ""),
        row("duration", fmtMs(durMs(s.duration)) + (s.open ? " so far" : "")),
        row("first chunk", s.timeToFirstChunk ? fmtMs(durMs(s.timeToFirstChunk)) : ""),
        row("tokens", fmtTokens(s.usage)), row("cost", fmtCost(s.cost)),
        row("error", s.errorCode ? `${s.errorCode}: ${s.errorMessage}` : "")),
      h("div.row.trace-events", h("span.hint", "events: "),
        s.eventSequences.length ? s.eventSequences.map((q) => h("a.trace-event", { href: `#ev-${q}`, onclick: (e: Event) => { e.preventDefault(); showEvent(q); } }, `#${q}`)) : h("span.hint", "none of its own")));
  }
}

// bar is a bar at left, width wide, its first ttft darker. Styles are set
// through the CSSOM: the console's CSP refuses style attributes.
function bar(left: string, width: string, ttft: string): HTMLElement {
  const b = h("div.trace-bar");
  b.style.left = left;
  b.style.width = `max(2px, ${width})`;
  if (ttft) {
    const t = h("div.trace-ttft");
    t.style.width = ttft;
    b.append(t);
  }
  return b;
}

function indent(el: HTMLElement, depth: number): HTMLElement {
  el.style.paddingLeft = `${depth * 14}px`;
  return el;
}

// showEvent scrolls to an event's card on the page and flashes it.
function showEvent(seq: bigint): void {
  const card = document.getElementById(`ev-${seq}`);
  if (!card) return;
  card.scrollIntoView({ block: "center" });
  card.classList.add("flash");
  setTimeout(() => card.classList.remove("flash"), 1500);
}
