// Rendering of one stored event in the timeline: who and where, what it
// said, the calls it made with their answers beside them, transfers,
// errors, state and artifact changes, what its model call used and cost,
// and the raw JSON.
import { toJson } from "@bufbuild/protobuf";
import { EventSchema, type Event } from "../../../../gen/ts/agentrunner/v1/event_pb.js";
import type { FunctionCall, FunctionResponse, Part } from "../../../../gen/ts/agentrunner/v1/content_pb.js";
import { RunStatus } from "../../../../gen/ts/agentrunner/v1/run_pb.js";
import { date, fmtCost, fmtTokens, statusName, shortId } from "../api.js";
import { blobImage, fmtTime, h, json, replace } from "../dom.js";
import { href, link, pathOf } from "../ui.js";
import { eventTools } from "../fork.js";
import { copyButton, rawJson } from "../copy.js";

// Calls and responses seen so far, by call id, so a response stored in a
// later event lands beside its call.
export class Pairs {
  responses = new Map<string, FunctionResponse>();
  calls = new Map<string, FunctionCall>();
  constructor(private root: HTMLElement) {}

  note(ev: Event): void {
    for (const p of ev.content?.parts ?? []) {
      if (p.data.case === "functionCall") this.calls.set(p.data.value.id, p.data.value);
      if (p.data.case === "functionResponse") {
        const fr = p.data.value;
        this.responses.set(fr.id, fr);
        for (const slot of this.root.querySelectorAll<HTMLElement>(`[data-call="${CSS.escape(fr.id)}"] .resp`)) {
          replace(slot, responseBody(fr));
        }
      }
    }
  }
}

function responseBody(fr: FunctionResponse): HTMLElement {
  return h("div", h("div.label", "response"), h("pre", json(fr.response ?? {})));
}

function part(p: Part, ev: Event, pairs: Pairs): HTMLElement | null {
  switch (p.data.case) {
    case "text":
      return h(p.thought ? "div.text.thought" : "div.text", p.thought ? h("span.tag", "thought") : null, p.data.value);
    case "inlineData": {
      const b = p.data.value;
      if (b.mimeType.startsWith("image/")) {
        const img = blobImage("img", new Blob([b.data as BlobPart], { type: b.mimeType }), b.displayName || b.mimeType);
        return h("div.blob", img, h("div.hint", b.displayName, " ", b.mimeType));
      }
      return h("div.blob.hint", `${b.displayName || "file"} (${b.mimeType}, ${b.data.length} bytes)`);
    }
    case "fileData":
      return h("div.blob.hint", `file ${p.data.value.fileUri} (${p.data.value.mimeType})`);
    case "functionCall": {
      const fc = p.data.value;
      const waits = ev.longRunningToolIds.includes(fc.id);
      const fr = pairs.responses.get(fc.id);
      return h("div.call", { "data-call": fc.id },
        h("div", h("div.label", "call ", h("code", fc.name), waits ? h("span.tag.warn", "waits for the caller") : null, h("span.hint", " ", fc.id)),
          h("pre", json(fc.args ?? {})), copyButton(() => json(fc.args ?? {}), "Copy args")),
        h("div.resp", fr ? responseBody(fr) : h("div.hint", waits ? "no answer yet" : "…")));
    }
    case "functionResponse": {
      const fr = p.data.value;
      return h("div.response-ref.hint", "answers ", h("code", fr.name), " ", fr.id, pairs.calls.has(fr.id) ? " (shown beside its call)" : "", h("details", h("summary", "response"), h("pre", json(fr.response ?? {}))));
    }
    default:
      return null;
  }
}

function actions(ev: Event, sessionPath: string): HTMLElement[] {
  const a = ev.actions;
  if (!a) return [];
  const out: HTMLElement[] = [];
  if (a.transferToAgent) out.push(h("div.transfer", h("span.arrow", "⇢"), " transfers to ", h("b", a.transferToAgent)));
  if (a.escalate) out.push(h("div.transfer", "↑ escalates to its parent loop"));
  if (a.stateDelta && Object.keys(a.stateDelta).length) {
    out.push(h("div.delta.state-delta", h("div.label", "state"), h("table", Object.entries(a.stateDelta).map(([k, v]) =>
      h("tr", h("td", h("code", k)), h("td", v === null ? h("i", "deleted") : h("code", JSON.stringify(v))))))));
  }
  const art = Object.entries(a.artifactDelta ?? {});
  if (art.length) {
    out.push(h("div.delta", h("div.label", "artifacts"), art.map(([f, v]) => link(href(`${sessionPath}/artifacts`, { file: f }), `${f} v${v}`))));
  }
  if (a.compaction) out.push(h("div.delta.hint", `compaction of #${a.compaction.startSequence}–#${a.compaction.endSequence}`));
  return out;
}

export function eventCard(ev: Event, pairs: Pairs, runStatus: (runId: string) => RunStatus | undefined, sessionPath: string): HTMLElement {
  const st = runStatus(ev.invocationId);
  const usage = fmtTokens(ev.usageMetadata);
  const cost = fmtCost(ev.cost);
  const err = ev.errorCode || ev.errorMessage;
  return h(`article.event${err ? ".has-error" : ""}${ev.author === "user" ? ".from-user" : ""}`, { "data-seq": String(ev.sequence), id: `ev-${ev.sequence}` },
    h("header",
      h("span.seq", `#${ev.sequence}`),
      h("b.author", ev.author),
      ev.branch && ev.branch !== ev.author ? h("span.tag", ev.branch) : null,
      ev.invocationId ? link(href(pathOf`runs/${ev.invocationId}`), h("span.tag.run", { title: ev.invocationId, "data-run": ev.invocationId }, shortId(ev.invocationId), h("span.run-st", st !== undefined ? ` ${statusName(st)}` : ""))) : null,
      h("span.grow"),
      ev.finishReason ? h("span.tag", ev.finishReason) : null,
      ev.modelVersion ? h("span.tag.model", ev.modelVersion) : null,
      usage ? h("span.usage", usage, cost ? ` · ${cost}` : "") : null,
      h("time.hint", fmtTime(date(ev.timestamp)))),
    err ? h("div.error-text", `${ev.errorCode} ${ev.errorMessage}`) : null,
    ev.interrupted ? h("div.hint", "cut off while streaming") : null,
    (ev.content?.parts ?? []).map((p) => part(p, ev, pairs)),
    actions(ev, sessionPath),
    eventTools(ev),
    rawJson(() => json(toJson(EventSchema, ev))),
  );
}

// updateRunTags shows a run's newest status on every event of it.
export function updateRunTags(root: HTMLElement, runId: string, st: RunStatus): void {
  for (const el of root.querySelectorAll<HTMLElement>(`.tag.run[data-run="${CSS.escape(runId)}"] .run-st`)) el.textContent = ` ${statusName(st)}`;
}
