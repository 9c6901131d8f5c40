// Search in a session: ListEvents with its filters (text, author, tool,
// errors only, run), which the server answers by scanning a bounded run
// of events a call. The panel asks again with the token until it has a
// page of matches or the session's end, in a bounded number of calls, and
// offers to go on from there. A match is a click away from its place in
// the timeline.
import { SessionService, ListEventsRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import type { Event as PEvent } from "../../../../gen/ts/agentrunner/v1/event_pb.js";
import { date, sessions } from "../api.js";
import { fmtTime, h, replace } from "../dom.js";
import { showError } from "../ui.js";
import { rpcButton } from "../rpc.js";

type Ctx = { app: string; user: string; sid: string };

const want = 50; // matches a search shows at once
const maxCalls = 40; // calls one search makes before it offers to go on

function summary(ev: PEvent): string {
  if (ev.errorCode || ev.errorMessage) return `${ev.errorCode} ${ev.errorMessage}`.trim();
  for (const p of ev.content?.parts ?? []) {
    if (p.data.case === "text") return p.data.value.slice(0, 160);
    if (p.data.case === "functionCall") return `calls ${p.data.value.name}`;
    if (p.data.case === "functionResponse") return `answer of ${p.data.value.name}`;
  }
  return ev.actions?.stateDelta ? `state: ${Object.keys(ev.actions.stateDelta).join(", ")}` : "";
}

export function searchPanel(ctx: Ctx, signal: AbortSignal, pick: (seq: number) => void): HTMLElement {
  const q = h("input#search-text", { type: "search", placeholder: "Search text  ( / )", size: 18 }) as HTMLInputElement;
  const author = h("input#search-author", { placeholder: "author", size: 8 }) as HTMLInputElement;
  const fn = h("input#search-function", { placeholder: "tool name", size: 9 }) as HTMLInputElement;
  const run = h("input#search-run", { placeholder: "run id", size: 8 }) as HTMLInputElement;
  const errors = h("input#search-errors", { type: "checkbox" }) as HTMLInputElement;
  const results = h("div#search-results");
  const req = (token = "") => ({
    appName: ctx.app, userId: ctx.user, sessionId: ctx.sid, pageSize: want, pageToken: token,
    query: q.value.trim(), author: author.value.trim(), functionName: fn.value.trim(), runId: run.value.trim(), errorsOnly: errors.checked,
  });
  let gen = 0;
  const search = async (token = "", into?: HTMLElement) => {
    const r = req(token);
    if (!r.query && !r.author && !r.functionName && !r.runId && !r.errorsOnly) {
      results.replaceChildren();
      return;
    }
    const mine = ++gen;
    const list = into ?? h("ol#search-list");
    if (!into) replace(results, h("p.hint#search-status", "Searching…"), list);
    const status = results.querySelector("#search-status")!;
    let found = list.children.length;
    const start = found;
    let next = token;
    try {
      for (let i = 0; i < maxCalls; i++) {
        const resp = await sessions.listEvents({ ...r, pageToken: next, pageSize: want - (found - start) }, { signal });
        if (mine !== gen) return;
        for (const ev of resp.events) {
          found++;
          list.append(h("li.search-hit", { "data-seq": String(ev.sequence) },
            h("a", { href: "#", onclick: (e: MouseEvent) => { e.preventDefault(); pick(Number(ev.sequence)); } }, `#${ev.sequence}`),
            " ", h("b", ev.author), " ", h("span.hint", fmtTime(date(ev.timestamp))), " ", h("span.hit-text", summary(ev))));
        }
        next = resp.nextPageToken;
        if (!next || found - start >= want) break;
      }
      status.textContent = `${found} match${found === 1 ? "" : "es"}${next ? " so far" : ""}.`;
      status.append(" ");
      if (next) status.append(h("button#search-more", { type: "button", onclick: () => void search(next, list) }, "Search further"));
    } catch (e) {
      if (!signal.aborted) showError(e);
    }
  };
  const form = h("form#search-form.row.search", {
    onsubmit: (e: Event) => {
      e.preventDefault();
      void search();
    },
  }, q, author, fn, run, h("label.hint", errors, " errors only"), h("button#search-go", { type: "submit" }, "Search"),
  rpcButton(SessionService, "listEvents", ListEventsRequestSchema, () => req(), "RPC"));
  return h("div.searchbox", form, results);
}
