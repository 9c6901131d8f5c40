// The history of one state key (GetStateHistory): every event that set
// or deleted it, oldest first, with the diff each made: for objects the
// fields added, removed and changed, for other values the old and the
// new one.
import type { JsonValue } from "@bufbuild/protobuf";
import type { Value } from "@bufbuild/protobuf/wkt";
import { SessionService, GetStateHistoryRequestSchema, type StateChange } from "../../../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import { date, sessions } from "../api.js";
import { fmtTime, h, replace } from "../dom.js";
import { href, link, pathOf, section } from "../ui.js";
import { rpcButton } from "../rpc.js";

type Ctx = { app: string; user: string; sid: string };

// value turns a google.protobuf.Value as the generated code holds it
// (a oneof) into JSON; undefined is no value. An old_value of null is no
// value too: over JSON an unset Value field and a null one look alike.
function value(v: Value | undefined): JsonValue | undefined {
  if (!v) return undefined;
  const k = v.kind;
  switch (k.case) {
    case "nullValue": return null;
    case "numberValue": case "stringValue": case "boolValue": return k.value;
    case "structValue": return Object.fromEntries(Object.entries(k.value.fields).map(([f, x]) => [f, value(x) ?? null]));
    case "listValue": return k.value.values.map((x) => value(x) ?? null);
    default: return undefined;
  }
}

function isObj(v: JsonValue | undefined): v is Record<string, JsonValue> {
  return v !== null && v !== undefined && typeof v === "object" && !Array.isArray(v);
}

const show = (v: JsonValue | undefined) => (v === undefined ? "(none)" : JSON.stringify(v));

// diff is what a change did, line by line: "+" added, "-" removed.
export function diff(old: JsonValue | undefined, now: JsonValue | undefined): HTMLElement {
  const lines: HTMLElement[] = [];
  if (now === null) {
    lines.push(h("div.del", `- ${show(old)}`), h("div.hint", "deleted"));
  } else if (isObj(old) && isObj(now)) {
    for (const f of new Set([...Object.keys(old), ...Object.keys(now)])) {
      const a = old[f], b = now[f];
      if (!(f in now)) lines.push(h("div.del", `- ${f}: ${show(a)}`));
      else if (!(f in old)) lines.push(h("div.ins", `+ ${f}: ${show(b)}`));
      else if (JSON.stringify(a) !== JSON.stringify(b)) lines.push(h("div.del", `- ${f}: ${show(a)}`), h("div.ins", `+ ${f}: ${show(b)}`));
    }
    if (!lines.length) lines.push(h("div.hint", "same value"));
  } else {
    if (old !== undefined) lines.push(h("div.del", `- ${show(old)}`));
    lines.push(h("div.ins", `+ ${show(now)}`));
  }
  return h("div.diff", lines);
}

export async function stateHistory(root: HTMLElement, signal: AbortSignal, ctx: Ctx, key: string): Promise<void> {
  const rows = h("tbody#history-rows");
  const more = h("button#history-more", { type: "button", hidden: true }, "Load more") as HTMLButtonElement;
  const req = (token = "") => ({ appName: ctx.app, userId: ctx.user, sessionId: ctx.sid, key, pageSize: 100, pageToken: token });
  const session = pathOf`apps/${ctx.app}/users/${ctx.user}/sessions/${ctx.sid}`;
  const row = (c: StateChange) => h("tr", { "data-seq": String(c.sequence) },
    h("td", link(href(session, { seq: String(c.sequence) }), `#${c.sequence}`)),
    h("td", h("b", c.author), c.invocationId ? h("div.hint", c.invocationId) : null),
    h("td.hint", fmtTime(date(c.time))),
    h("td", diff(value(c.oldValue) ?? undefined, value(c.newValue))));
  let next = "";
  const load = async () => {
    // A page may hold no change and a token: the server examines a
    // bounded run of events a call. A few calls in a row fill the page.
    for (let i = 0, got = 0; i < 20 && got < 100; i++) {
      const resp = await sessions.getStateHistory(req(next), { signal });
      for (const c of resp.changes) rows.append(row(c));
      got += resp.changes.length;
      next = resp.nextPageToken;
      if (!next) break;
    }
    more.hidden = !next;
    if (!rows.children.length && !next) rows.append(h("tr", h("td.hint", { colspan: 4 }, "No event of this session changed it.")));
  };
  more.addEventListener("click", () => void load());
  replace(root, section(`History of ${key}`, [rpcButton(SessionService, "getStateHistory", GetStateHistoryRequestSchema, () => req())],
    h("table.list.history", h("thead", h("tr", h("th", "event"), h("th", "by"), h("th", "time"), h("th", "change"))), rows), more));
  await load();
  root.scrollIntoView({ block: "start" });
}
