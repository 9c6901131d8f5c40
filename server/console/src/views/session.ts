// One session: a header (usage, cost, export) and tabs, each a deep link:
// chat (with the timeline), state, artifacts, tool calls, usage.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  SessionService, GetSessionRequestSchema, AppendEventRequestSchema, ListToolCallsRequestSchema,
} from "../../../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import {
  ArtifactService, ListArtifactsRequestSchema, ListArtifactVersionsRequestSchema, DeleteArtifactRequestSchema, LoadArtifactRequestSchema,
} from "../../../../gen/ts/agentrunner/service/v1/artifact_service_pb.js";
import { RunnerService, ListRunsRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import type { AgentInfo, ToolInfo } from "../../../../gen/ts/agentrunner/v1/agent_pb.js";
import type { ArtifactVersion } from "../../../../gen/ts/agentrunner/v1/artifact_pb.js";
import type { Session } from "../../../../gen/ts/agentrunner/v1/session_pb.js";
import { artifacts, date, fmtCost, fmtTokens, runner, sessions, statusName, shortId } from "../api.js";
import { blobImage, download, fmtAge, fmtTime, h, json, replace } from "../dom.js";
import { href, link, pathOf, section, showError } from "../ui.js";
import { rpcButton } from "../rpc.js";
import { chatTab } from "./chat.js";
import { exportSession } from "./sessions.js";
import { forkedFrom } from "../fork.js";
import { stateHistory } from "./history.js";

const tabs = ["chat", "state", "artifacts", "tools", "usage"] as const;

function collectTools(a: AgentInfo | undefined, into: Map<string, ToolInfo>): void {
  if (!a) return;
  for (const t of a.toolDetails) into.set(t.name, t);
  for (const s of a.subAgents) collectTools(s, into);
}

export async function sessionView(root: HTMLElement, signal: AbortSignal, app: string, user: string, sid: string, tab: string): Promise<void> {
  const path = pathOf`apps/${app}/users/${user}/sessions/${sid}`;
  const [got, apps] = await Promise.all([
    sessions.getSession({ appName: app, userId: user, sessionId: sid, numRecentEvents: 1 }, { signal }),
    runner.listApps({}, { signal }),
  ]);
  const s = got.session!;
  const tools = new Map<string, ToolInfo>();
  collectTools(apps.apps.find((a) => a.name === app)?.rootAgent, tools);
  const body = h("div#tab-body");
  const meta = headerMeta(signal, s.lastSequence, date(s.updateTime));
  replace(root,
    h("section.card.session-head",
      h("div.row.head",
        h("h2", "Session ", h("code#session-id", sid)),
        h("span.grow"),
        h("span.usage#session-usage", fmtTokens(s.usage), s.cost ? ` · ${fmtCost(s.cost)}` : ""),
        h("button", { type: "button", onclick: () => exportSession(app, user, sid).catch((e) => showError(e)) }, "Export JSON"),
        rpcButton(SessionService, "getSession", GetSessionRequestSchema, () => ({ appName: app, userId: user, sessionId: sid, numRecentEvents: 50 }))),
      h("div.hint", link(href(pathOf`apps/${app}/users/${user}/sessions`), `${app} / ${user}`), meta.el, forkedFrom(s)),
      h("div.tabs", tabs.map((t) => {
        const a = link(href(t === "chat" ? path : `${path}/${t}`), t === "tools" ? "tool calls" : t);
        a.id = `tab-${t}`;
        if (t === tab) a.classList.add("active");
        return a;
      }))),
    body,
  );
  switch (tab) {
    case "state":
      return stateTab(body, signal, app, user, sid, s);
    case "artifacts":
      return artifactsTab(body, signal, app, user, sid);
    case "tools":
      return toolsTab(body, signal, app, user, sid);
    case "usage":
      return usageTab(body, signal, app, user, sid, s);
    default:
      return chatTab(body, signal, { app, user, sid, path, lastSequence: s.lastSequence, tools, progress: meta.set });
  }
}

// headerMeta is the header's "N events · updated T ago": the chat tells
// it of each event it gets, and the age ticks.
function headerMeta(signal: AbortSignal, last: bigint, at: Date | undefined) {
  const el = h("span#session-meta");
  const draw = () => { el.textContent = ` · ${last} event${last === 1n ? "" : "s"} · updated ${fmtAge(at)} ago`; };
  draw();
  const timer = setInterval(draw, 5000);
  signal.addEventListener("abort", () => clearInterval(timer));
  return {
    el,
    set: (n: bigint, t: Date | undefined) => {
      if (n > last) last = n;
      at = t && (!at || t > at) ? t : at ?? new Date();
      draw();
    },
  };
}

function scopeOf(k: string): string {
  if (k.startsWith("app:")) return "app";
  if (k.startsWith("user:")) return "user";
  return "session";
}

function randomId(): string {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// stateTab shows the merged state by scope and edits it the way the API
// does: an event with a state_delta (AppendEvent), which the timeline then
// shows like any other.
function stateTab(root: HTMLElement, signal: AbortSignal, app: string, user: string, sid: string, s: Session): void {
  const history = h("div#state-history");
  const showHistory = (k: string) => void stateHistory(history, signal, { app, user, sid }, k).catch((e) => showError(e));
  const state = (s.state ?? {}) as JsonObject;
  const key = h("input#state-key", { placeholder: "key (user:… and app:… are shared)", size: 30 }) as HTMLInputElement;
  const value = h("textarea#state-value", { rows: 3, placeholder: '"a JSON value"; null deletes the key' }) as HTMLTextAreaElement;
  const result = h("div#state-result");
  const req = () => {
    let v: JsonValue;
    try {
      v = JSON.parse(value.value) as JsonValue;
    } catch {
      v = value.value;
    }
    return { appName: app, userId: user, sessionId: sid, event: { author: "user", invocationId: `console-${randomId()}`, actions: { stateDelta: { [key.value.trim()]: v } } } };
  };
  const scopes = ["session", "user", "app"].map((sc) => {
    const keys = Object.keys(state).filter((k) => scopeOf(k) === sc).sort();
    return h("div.scope", h("h3", sc === "session" ? "Session" : sc === "user" ? `User (user: keys, every session of ${user})` : "App (app: keys, every user)"),
      keys.length ? h("table.state", keys.map((k) => h("tr", { "data-key": k },
        h("td", h("code", k)), h("td", h("pre", json(state[k]))),
        h("td.actions", h("button", { type: "button", onclick: () => { key.value = k; value.value = JSON.stringify(state[k]); key.focus(); } }, "Edit"),
          h("button.history", { type: "button", onclick: () => showHistory(k) }, "History"))))) : h("p.hint", "empty"));
  });
  replace(root,
    section("State now", [], ...scopes),
    history,
    section("Change state", [rpcButton(SessionService, "appendEvent", AppendEventRequestSchema, req)],
      h("form.stack", {
        onsubmit: async (e: Event) => {
          e.preventDefault();
          if (!key.value.trim()) return;
          try {
            const resp = await sessions.appendEvent(req());
            replace(result, h("p", "Stored as event ", link(href(pathOf`apps/${app}/users/${user}/sessions/${sid}`), `#${resp.event!.sequence}`), " of the timeline. ", link(href(pathOf`apps/${app}/users/${user}/sessions/${sid}/state`), "Reload state")));
          } catch (err) {
            showError(err);
          }
        },
      }, key, value, h("div.row", h("button#state-save", { type: "submit" }, "Append state change")), result)));
}

async function artifactsTab(root: HTMLElement, signal: AbortSignal, app: string, user: string, sid: string): Promise<void> {
  const files = h("tbody#artifact-rows");
  const detail = h("div#artifact-detail");
  const more = h("button", { type: "button" }, "Load more") as HTMLButtonElement;
  let next = "";
  const load = async (token: string) => {
    const resp = await artifacts.listArtifacts({ appName: app, userId: user, sessionId: sid, pageSize: 50, pageToken: token }, { signal });
    for (const a of resp.artifacts) {
      files.append(h("tr", { "data-file": a.filename },
        h("td", h("a", { href: href(pathOf`apps/${app}/users/${user}/sessions/${sid}/artifacts`, { file: a.filename }), onclick: (e: MouseEvent) => { e.preventDefault(); history.replaceState(null, "", href(pathOf`apps/${app}/users/${user}/sessions/${sid}/artifacts`, { file: a.filename })); void versions(detail, signal, app, user, sid, a.filename).catch((er) => showError(er)); } }, a.filename)),
        h("td", `v${a.version}`), h("td", a.mimeType), h("td", `${a.sizeBytes} B`), h("td", fmtTime(date(a.createTime)))));
    }
    if (!resp.artifacts.length && !token) files.append(h("tr", h("td.hint", { colspan: 5 }, "No artifacts in this session.")));
    next = resp.nextPageToken;
    more.hidden = !next;
  };
  more.addEventListener("click", () => void load(next).catch((e) => showError(e)));
  replace(root,
    section("Artifacts", [rpcButton(ArtifactService, "listArtifacts", ListArtifactsRequestSchema, () => ({ appName: app, userId: user, sessionId: sid, pageSize: 50 }))],
      h("table.list", h("thead", h("tr", h("th", "file"), h("th", "latest"), h("th", "type"), h("th", "size"), h("th", "saved"))), files), more),
    detail);
  await load("");
  const file = new URLSearchParams(location.search).get("file");
  if (file) await versions(detail, signal, app, user, sid, file);
}

async function versions(root: HTMLElement, signal: AbortSignal, app: string, user: string, sid: string, file: string): Promise<void> {
  const resp = await artifacts.listArtifactVersions({ appName: app, userId: user, sessionId: sid, filename: file, pageSize: 100 }, { signal });
  const preview = h("div#artifact-preview");
  const rows = resp.versions.slice().sort((a, b) => Number(b.version - a.version)).map((v) => versionRow(v, preview, () => versions(root, signal, app, user, sid, file), app, user, sid));
  replace(root, section(`Versions of ${file}`, [rpcButton(ArtifactService, "listArtifactVersions", ListArtifactVersionsRequestSchema, () => ({ appName: app, userId: user, sessionId: sid, filename: file }))],
    h("table.list", h("tbody#version-rows", rows.length ? rows : h("tr", h("td.hint", "No versions left.")))), preview));
}

function versionRow(v: ArtifactVersion, preview: HTMLElement, reload: () => Promise<void>, app: string, user: string, sid: string): HTMLElement {
  const key = { appName: app, userId: user, sessionId: sid, filename: v.filename, version: v.version };
  const load = async () => {
    const r = await artifacts.loadArtifact(key);
    const p = r.artifact?.data;
    if (p?.case === "text") return { mime: "text/plain", data: new TextEncoder().encode(p.value) };
    if (p?.case === "inlineData") return { mime: p.value.mimeType || v.mimeType, data: p.value.data };
    throw new Error(`artifact ${v.filename} v${v.version} has no data the console can show`);
  };
  const del = h("button.danger.delete-version", { type: "button" }, "Delete") as HTMLButtonElement;
  del.addEventListener("click", async () => {
    if (del.dataset.armed !== "1") {
      del.dataset.armed = "1";
      del.textContent = "Really delete?";
      return;
    }
    try {
      await artifacts.deleteArtifact(key);
      await reload();
    } catch (e) {
      showError(e);
    }
  });
  return h("tr", { "data-version": String(v.version) },
    h("td", `v${v.version}`), h("td", v.mimeType), h("td", `${v.sizeBytes} B`), h("td.hint", { title: v.sha256 }, v.sha256.slice(0, 12)), h("td", fmtTime(date(v.createTime))),
    h("td.actions",
      h("button.preview", { type: "button", onclick: async () => { try { showPreview(preview, v, await load()); } catch (e) { showError(e); } } }, "Preview"),
      h("button", { type: "button", onclick: async () => { try { const d = await load(); download(v.filename, new Blob([d.data as BlobPart], { type: d.mime })); } catch (e) { showError(e); } } }, "Download"),
      rpcButton(ArtifactService, "loadArtifact", LoadArtifactRequestSchema, () => key, "RPC"),
      rpcButton(ArtifactService, "deleteArtifact", DeleteArtifactRequestSchema, () => key, "RPC: delete"),
      del));
}

function showPreview(root: HTMLElement, v: ArtifactVersion, d: { mime: string; data: Uint8Array }): void {
  let body: HTMLElement;
  if (d.mime.startsWith("image/")) {
    body = blobImage("img.preview-img", new Blob([d.data as BlobPart], { type: d.mime }), v.filename);
  } else if (d.mime.startsWith("text/") || d.mime.includes("json") || d.mime.includes("xml") || d.mime.includes("yaml")) {
    let text = new TextDecoder().decode(d.data.slice(0, 1 << 20));
    if (d.mime.includes("json")) {
      try {
        text = json(JSON.parse(text));
      } catch {
        /* shown as it is */
      }
    }
    body = h("pre.preview-text", text);
  } else {
    body = h("p.hint", `${d.mime}, ${d.data.length} bytes: no preview; download it.`);
  }
  replace(root, h("div.card", h("div.label", `${v.filename} v${v.version}`), body));
}

async function toolsTab(root: HTMLElement, signal: AbortSignal, app: string, user: string, sid: string): Promise<void> {
  const resp = await sessions.listToolCalls({ appName: app, userId: user, sessionId: sid }, { signal });
  const eventAt = async (seq: bigint) => {
    if (!seq) return undefined;
    const r = await sessions.listEvents({ appName: app, userId: user, sessionId: sid, pageSize: 1, afterSequence: seq - 1n }, { signal });
    return r.events[0];
  };
  const rows = resp.toolCalls.slice().reverse().map((tc) => {
    const detail = h("div.hint", "…");
    const d = <HTMLDetailsElement>h("details.toolcall", { "data-call": tc.callId },
      h("summary",
        h("code", tc.tool), " ", h("span.tag", tc.waitsForCaller ? "client-executed" : "server-executed"),
        tc.responseSequence ? h("span.tag.ok", "answered") : h("span.tag.warn", "no result yet"),
        h("span.hint", ` by ${tc.author} · call #${tc.callSequence}${tc.responseSequence ? ` → #${tc.responseSequence}` : ""} · ${fmtTime(date(tc.callTime))}`)),
      detail);
    d.addEventListener("toggle", async () => {
      if (!d.open || detail.dataset.loaded) return;
      detail.dataset.loaded = "1";
      try {
        const [ce, re] = await Promise.all([eventAt(tc.callSequence), eventAt(tc.responseSequence)]);
        const call = ce?.content?.parts.find((p) => p.data.case === "functionCall" && p.data.value.id === tc.callId);
        const res = re?.content?.parts.find((p) => p.data.case === "functionResponse" && p.data.value.id === tc.callId);
        const args = call?.data.case === "functionCall" ? call.data.value.args : undefined;
        const out = res?.data.case === "functionResponse" ? res.data.value.response : undefined;
        const decision = tc.tool === "request_confirmation" && out ? (out.confirmed === true ? "approved" : "rejected") : "";
        replace(detail, h("div.call",
          h("div", h("div.label", "arguments"), h("pre", json(args ?? {}))),
          h("div", h("div.label", "result", decision ? ` (confirmation ${decision})` : ""), out ? h("pre", json(out)) : h("p.hint", "none yet"))),
        h("div.hint", `run ${tc.invocationId} · args sha256 ${tc.argsDigest.slice(0, 12)} · result sha256 ${tc.resultDigest.slice(0, 12)}`));
      } catch (e) {
        showError(e);
      }
    });
    return d;
  });
  replace(root, section(`Tool calls (${resp.toolCalls.length})`, [rpcButton(SessionService, "listToolCalls", ListToolCallsRequestSchema, () => ({ appName: app, userId: user, sessionId: sid }))],
    rows.length ? h("div#toolcalls", rows) : h("p.hint", "No tool calls in this session.")));
}

async function usageTab(root: HTMLElement, signal: AbortSignal, app: string, user: string, sid: string, s: Session): Promise<void> {
  const tbody = h("tbody#run-usage");
  const more = h("button", { type: "button" }, "Load more") as HTMLButtonElement;
  let next = "";
  const load = async (token: string) => {
    const r = await runner.listRuns({ appName: app, userId: user, sessionId: sid, pageSize: 50, pageToken: token }, { signal });
    for (const run of r.runs) {
      tbody.append(h("tr", h("td", link(href(pathOf`runs/${run.runId}`), h("code", shortId(run.runId)))), h("td", statusName(run.status)), h("td", fmtTime(date(run.createTime))),
        h("td", fmtTokens(run.usage)), h("td", fmtCost(run.cost)),
        h("td.hint", Object.entries(run.usageByAgent).map(([a, u]) => `${a}: ${u.totalTokenCount}`).join(", "))));
    }
    next = r.nextPageToken;
    more.hidden = !next;
  };
  more.addEventListener("click", () => void load(next).catch((e) => showError(e)));
  replace(root,
    section("Session usage", [rpcButton(RunnerService, "listRuns", ListRunsRequestSchema, () => ({ appName: app, userId: user, sessionId: sid, pageSize: 50 }))],
      h("p", `Tokens: ${fmtTokens(s.usage) || "none"}. Cost: ${fmtCost(s.cost) || "none"}. Each model call's usage and cost is on its event in the timeline.`),
      h("table.list", h("thead", h("tr", h("th", "run"), h("th", "status"), h("th", "created"), h("th", "tokens"), h("th", "cost"), h("th", "by agent"))), tbody), more,
      h("p", link(href("usage", { app, user }), "Daily usage of the app and user →"))));
  await load("");
}
