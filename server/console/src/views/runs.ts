// The runs board: the runs of an app across sessions, for one user or
// (admins) every user, active (PENDING, RUNNING, INPUT_REQUIRED) by default,
// or ended, or of one status; in an order of the runs loaded; with their
// tokens and cost (so far, while they run), refreshed every few seconds.
// And one run: its record, trace and agent graph, followed live with
// AttachRun.
import { RunnerService, ListRunsRequestSchema, AttachRunRequestSchema, CancelRunRequestSchema, GetRunRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import { RunStatus, type Run } from "../../../../gen/ts/agentrunner/v1/run_pb.js";
import { activeStatuses, date, fmtCost, fmtTokens, isActive, runner, statusName, tryOpenStream, shortId } from "../api.js";
import { fmtAge, fmtTime, h, replace } from "../dom.js";
import { href, link, pathOf, navigate, poll, section, showError } from "../ui.js";
import { rpcButton } from "../rpc.js";
import { eventCard, Pairs, updateRunTags } from "./events.js";
import { RunInsight } from "./insight.js";

const refreshMs = 3000;

function sessionPath(r: Run): string {
  return pathOf`apps/${r.appName}/users/${r.userId}/sessions/${r.sessionId}`;
}

async function cancel(id: string, after: () => void): Promise<void> {
  try {
    await runner.cancelRun({ runId: id });
    after();
  } catch (e) {
    showError(e);
  }
}

// The board's status filters: a group or one status.
const endedStatuses = [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED];
const statusFilters: Record<string, RunStatus[]> = {
  active: activeStatuses,
  ended: endedStatuses,
  all: [],
  ...Object.fromEntries([...activeStatuses, ...endedStatuses].map((s) => [statusName(s).toLowerCase(), [s]])),
};

// The board's orders, of the runs it has loaded (the server lists newest
// first).
const sorts: Record<string, [string, (a: Run, b: Run) => number]> = {
  newest: ["newest first", (a, b) => ms(b.createTime) - ms(a.createTime)],
  oldest: ["oldest first", (a, b) => ms(a.createTime) - ms(b.createTime)],
  longest: ["longest first", (a, b) => runMs(b) - runMs(a)],
  tokens: ["most tokens first", (a, b) => Number(b.totalTokens || BigInt(b.usage?.totalTokenCount ?? 0)) - Number(a.totalTokens || BigInt(a.usage?.totalTokenCount ?? 0))],
  cost: ["most cost first", (a, b) => Number((b.cost?.micros ?? 0n) - (a.cost?.micros ?? 0n))],
};

function ms(t: Run["createTime"]): number {
  return date(t)?.getTime() ?? 0;
}

// runMs is how long a run ran: to its end, or so far.
function runMs(r: Run): number {
  const start = ms(r.startTime) || ms(r.createTime);
  return start ? (ms(r.endTime) || Date.now()) - start : 0;
}

function fmtRunMs(r: Run): string {
  const d = runMs(r);
  if (!d) return "";
  return d < 1000 ? `${d} ms` : fmtAge(new Date(Date.now() - d));
}

export async function runsView(root: HTMLElement, signal: AbortSignal, app: string, user: string, all: boolean, status = "active", sort = "newest"): Promise<void> {
  const apps = (await runner.listApps({}, { signal })).apps;
  if (!app) app = localStorage.getItem("agentrunner.app") || apps[0]?.name || "";
  if (!(status in statusFilters)) status = "active";
  if (!(sort in sorts)) sort = "newest";
  const appSel = h("select#runs-app", apps.map((a) => h("option", { value: a.name, selected: a.name === app }, a.name))) as HTMLSelectElement;
  const userIn = h("input#runs-user", { value: user, placeholder: "user id", size: 12, disabled: all }) as HTMLInputElement;
  const allBox = h("input#runs-all", { type: "checkbox", checked: all }) as HTMLInputElement;
  const statusSel = h("select#runs-status", Object.keys(statusFilters).map((k) => h("option", { value: k, selected: k === status }, k))) as HTMLSelectElement;
  const sortSel = h("select#runs-sort", Object.entries(sorts).map(([k, [label]]) => h("option", { value: k, selected: k === sort }, label))) as HTMLSelectElement;
  const go = () => navigate(href("runs", { app: appSel.value, user: userIn.value.trim(), all: allBox.checked ? "1" : undefined,
    status: statusSel.value === "active" ? undefined : statusSel.value, sort: sortSel.value === "newest" ? undefined : sortSel.value }), true);
  for (const c of [appSel, userIn, allBox, statusSel, sortSel]) c.addEventListener("change", go);
  const rows = h("tbody#runs-rows");
  const stamp = h("span.hint#runs-stamp");
  const more = h("button#runs-more", { type: "button", hidden: true }, "Load more");
  const req = () => ({ appName: app, userId: all ? "" : user, statuses: statusFilters[status], pageSize: 50 });
  let loaded: Run[] = [];
  let next = "";
  const draw = () => {
    const shown = [...loaded].sort(sorts[sort][1]);
    replace(rows, shown.length ? shown.map((r) => runRow(r, () => void refresh())) : h("tr", h("td.hint", { colspan: 10 }, status === "active" ? "No active runs." : "No runs.")));
    replace(stamp, `${loaded.length}${next ? "+" : ""} ${status === "active" || status === "ended" ? status : status === "all" ? "runs" : status} · refreshed ${new Date().toLocaleTimeString()}`);
    more.hidden = !next;
  };
  // refresh lists the first pages again, as many runs as were shown.
  const refresh = async () => {
    const want = Math.max(loaded.length, 1);
    let got: Run[] = [];
    let token = "";
    do {
      const resp = await runner.listRuns({ ...req(), pageToken: token }, { signal });
      got = got.concat(resp.runs);
      token = resp.nextPageToken;
    } while (token && got.length < want);
    loaded = got;
    next = token;
    draw();
  };
  more.addEventListener("click", () => void (async () => {
    const resp = await runner.listRuns({ ...req(), pageToken: next }, { signal });
    loaded = loaded.concat(resp.runs);
    next = resp.nextPageToken;
    draw();
  })().catch((e) => showError(e)));
  replace(root, section("Runs board", [h("button#runs-refresh", { type: "button", onclick: () => void refresh().catch((e) => showError(e)) }, "Refresh"), rpcButton(RunnerService, "listRuns", ListRunsRequestSchema, req)],
    h("div.row.wrap", h("label", "App ", appSel), h("label", "User ", userIn), h("label", allBox, " all users (admins)"), h("label", "Status ", statusSel), h("label", "Order ", sortSel), h("span.grow"), stamp),
    h("table.list", h("thead", h("tr", h("th", "status"), h("th", "run"), h("th", "user / session"), h("th", "waits on"), h("th", "age"), h("th", "ran"), h("th", "tokens"), h("th", "cost"), h("th", ""))), rows),
    more));
  if (!app || (!user && !all)) {
    replace(rows, h("tr", h("td.hint", { colspan: 10 }, "Pick an app and a user (or all users).")));
    return;
  }
  await refresh();
  poll(signal, refreshMs, refresh);
}

function runRow(r: Run, changed: () => void): HTMLElement {
  const active = isActive(r.status);
  return h("tr", { "data-run": r.runId, "data-status": statusName(r.status), "data-user": r.userId, "data-tokens": String(r.totalTokens || r.usage?.totalTokenCount || 0) },
    h("td", h(`span.status.s-${statusName(r.status).toLowerCase()}`, statusName(r.status))),
    h("td", link(href(pathOf`runs/${r.runId}`), h("code", shortId(r.runId)))),
    h("td", `${r.userId} / `, link(href(sessionPath(r)), h("code", shortId(r.sessionId)))),
    h("td", r.pendingCallIds.length ? `${r.pendingCallIds.length} call${r.pendingCallIds.length > 1 ? "s" : ""}` : ""),
    h("td", fmtAge(date(r.createTime))),
    h("td.ran", fmtRunMs(r), active && runMs(r) ? h("span.hint", " so far") : null),
    h("td.tokens", fmtTokens(r.usage), active && r.usage?.totalTokenCount ? h("span.hint", " so far") : null),
    h("td.cost", fmtCost(r.cost)),
    h("td.actions",
      r.status === RunStatus.INPUT_REQUIRED ? link(href(sessionPath(r)), "Answer") : link(href(pathOf`runs/${r.runId}`), active ? "Attach" : "Trace"),
      active ? h("button.danger", { type: "button", onclick: () => void cancel(r.runId, changed) }, "Cancel") : null));
}

export async function runView(root: HTMLElement, signal: AbortSignal, id: string): Promise<void> {
  const got = (await runner.getRun({ runId: id }, { signal })).run!;
  const head = h("div#run-head");
  const live = h("div#live");
  const events = h("div#timeline");
  const pairs = new Pairs(events);
  const statuses = new Map<string, RunStatus>();
  const drawHead = (r: Run) => {
    statuses.set(r.runId, r.status);
    updateRunTags(events, r.runId, r.status);
    replace(head,
      h("div.row", h(`span.status.s-${statusName(r.status).toLowerCase()}#run-status`, statusName(r.status)), h("span.grow"),
        isActive(r.status) && r.status !== RunStatus.INPUT_REQUIRED ? h("button#run-cancel.danger", { type: "button", onclick: () => void cancel(r.runId, () => {}) }, "Cancel") : null,
        r.status === RunStatus.INPUT_REQUIRED ? link(href(sessionPath(r)), "Answer in the session →") : null),
      h("table.kv",
        h("tr", h("td", "session"), h("td", link(href(sessionPath(r)), `${r.appName} / ${r.userId} / ${r.sessionId}`))),
        h("tr", h("td", "created"), h("td", fmtTime(date(r.createTime)))),
        h("tr", h("td", "ended"), h("td", fmtTime(date(r.endTime)))),
        h("tr", h("td", "events"), h("td", r.firstSequence ? `#${r.firstSequence}–#${r.lastSequence}` : "none yet")),
        h("tr", h("td", "tokens"), h("td", fmtTokens(r.usage))),
        h("tr", h("td", "cost"), h("td", fmtCost(r.cost))),
        r.pendingCallIds.length ? h("tr", h("td", "waits on"), h("td", r.pendingCallIds.join(", "))) : null,
        r.error ? h("tr", h("td", "error"), h("td.error-text", `${r.error.code}: ${r.error.message}`)) : null,
        r.continuedByRunId ? h("tr", h("td", "continued by"), h("td", link(href(pathOf`runs/${r.continuedByRunId}`), r.continuedByRunId))) : null));
  };
  drawHead(got);
  const insight = await RunInsight.open(got, signal);
  replace(root, section(`Run ${id}`, [rpcButton(RunnerService, "attachRun", AttachRunRequestSchema, () => ({ runId: id })), rpcButton(RunnerService, "getRun", GetRunRequestSchema, () => ({ runId: id }), "RPC: get"), rpcButton(RunnerService, "cancelRun", CancelRunRequestSchema, () => ({ runId: id }), "RPC: cancel")], head),
    insight.elements, live, h("h3", "Events of the run, newest first"), events);
  const release = tryOpenStream();
  if (!release) {
    live.append(h("p.hint", "Two streams are open in this tab already; showing the run's record only."));
    if (isActive(got.status)) poll(signal, refreshMs, () => insight.poll());
    return;
  }
  const path = sessionPath(got);
  const seen = new Set<bigint>();
  try {
    let text: HTMLElement | undefined;
    for await (const resp of runner.attachRun({ runId: id }, { signal })) {
      const p = resp.payload;
      if (p.case === "run") {
        drawHead(p.value);
        insight.changed(p.value);
      } else if (p.case === "error") live.append(h("div.error-text", `agent error ${p.value.code}: ${p.value.message}`));
      else if (p.case === "event" && p.value.partial) {
        insight.streamed(p.value.author);
        if (!text?.isConnected) {
          text = h("div#live-text.text.streaming");
          replace(live, h("div.live-head", h("b", p.value.author), h("span.tag", "streaming")), text);
        }
        for (const part of p.value.content?.parts ?? []) if (part.data.case === "text") text.append(part.data.value);
      } else if (p.case === "event" && !seen.has(p.value.sequence)) {
        seen.add(p.value.sequence);
        live.replaceChildren();
        pairs.note(p.value);
        events.prepend(eventCard(p.value, pairs, (r) => statuses.get(r), path));
        insight.stored(p.value.author);
      }
    }
  } catch (e) {
    if (!signal.aborted) showError(e);
  } finally {
    release();
  }
}
