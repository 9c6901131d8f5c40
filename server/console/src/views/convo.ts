// One event as a line of the conversation: the user's words on the
// right, an agent's on the left, tool calls folded in the flow (a click
// opens their arguments and answer), transfers and state changes as
// small notes, a run stopped by its caller marked stopped with what it
// had said, other errors in red. The inspector beside it shows the same
// event in full.
import type { Event } from "../../../../gen/ts/agentrunner/v1/event_pb.js";
import { RunStatus } from "../../../../gen/ts/agentrunner/v1/run_pb.js";
import type { Pairs } from "./events.js";
import { h, json } from "../dom.js";

// stoppedEvent is an event a stopped run left: what its agent had
// streamed when its caller cancelled it (error code CANCELLED, cut off).
export function stoppedEvent(ev: Event): boolean {
  return ev.interrupted && ev.errorCode === "CANCELLED";
}

export function convoRow(ev: Event, pairs: Pairs, runStatus: (runId: string) => RunStatus | undefined, select: (seq: number) => void): HTMLElement {
  const mine = ev.author === "user";
  const texts: HTMLElement[] = [];
  const calls: HTMLElement[] = [];
  for (const p of ev.content?.parts ?? []) {
    const d = p.data;
    if (d.case === "text" && d.value) texts.push(h(p.thought ? "div.text.thought" : "div.text", d.value));
    else if (d.case === "functionCall") {
      const fr = pairs.responses.get(d.value.id);
      const waits = ev.longRunningToolIds.includes(d.value.id);
      calls.push(h("details.fold", { "data-call": d.value.id },
        h("summary", "⚙ ", h("code", d.value.name), waits && !fr ? h("span.tag.warn", "waits for an answer") : fr ? h("span.tag.ok", "answered") : null),
        h("div.label", "arguments"), h("pre", json(d.value.args ?? {})),
        h("div.resp", fr ? h("div", h("div.label", "response"), h("pre", json(fr.response ?? {}))) : null)));
    } else if (d.case === "functionResponse") {
      calls.push(h("details.fold.answer-of", h("summary", "↳ ", h("code", d.value.name), " answered"), h("pre", json(d.value.response ?? {}))));
    } else if (d.case === "inlineData" || d.case === "fileData") {
      calls.push(h("div.hint", d.case === "inlineData" ? `📎 ${d.value.displayName || d.value.mimeType}` : `📎 ${d.value.fileUri}`));
    }
  }
  const notes: HTMLElement[] = [];
  const a = ev.actions;
  if (a?.transferToAgent) notes.push(h("div.note", `⇢ transfers to ${a.transferToAgent}`));
  if (a?.stateDelta && Object.keys(a.stateDelta).length) notes.push(h("div.note", `state: ${Object.keys(a.stateDelta).join(", ")}`));
  const stopped = stoppedEvent(ev) || (ev.interrupted && runStatus(ev.invocationId) === RunStatus.CANCELLED);
  const err = !stopped && (ev.errorCode || ev.errorMessage) ? h("div.error-text", `${ev.errorCode} ${ev.errorMessage}`) : null;
  const empty = !texts.length && !calls.length && !err && !stopped;
  const cls = `div.msg${mine ? ".mine" : ".agent"}${stopped ? ".stopped" : ""}${empty ? ".quiet" : ""}`;
  return h(cls, { "data-seq": String(ev.sequence), onclick: (e: MouseEvent) => { if (!(e.target as HTMLElement).closest("summary, a, pre")) select(Number(ev.sequence)); } },
    empty ? null : h("div.who", h("b", ev.author), stopped ? h("span.tag.warn.stopped-tag", "stopped") : null, ev.interrupted && !stopped ? h("span.tag", "cut off") : null),
    h("div.bubble", texts, calls, err, notes, empty && !notes.length ? h("div.note", `#${ev.sequence}`) : null));
}
