// The runs board: the active runs (PENDING, RUNNING, INPUT_REQUIRED) of an
// app across sessions, for one user or (admins) every user, refreshed every
// few seconds; and one run, followed live with AttachRun.
import { RunnerService, ListRunsRequestSchema, AttachRunRequestSchema, CancelRunRequestSchema, GetRunRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import { RunStatus, type Run } from "../../../../gen/ts/agentrunner/v1/run_pb.js";
import { activeStatuses, date, fmtCost, fmtTokens, isActive, runner, statusName, tryOpenStream, shortId } from "../api.js";
import { fmtAge, fmtTime, h, replace } from "../dom.js";
import { href, link, pathOf, navigate, poll, section, showError } from "../ui.js";
import { rpcButton } from "../rpc.js";
import { eventCard, Pairs, updateRunTags } from "./events.js";
import { TraceView } from "./trace.js";
import { agentGraph, pathOfTrace } from "./graph.js";

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

export async function runsView(root: HTMLElement, signal: AbortSignal, app: string, user: string, all: boolean): Promise<void> {
  const apps = (await runner.listApps({}, { signal })).apps;
  if (!app) app = localStorage.getItem("agentrunner.app") || apps[0]?.name || "";
  const appSel = h("select#runs-app", apps.map((a) => h("option", { value: a.name, selected: a.name === app }, a.name))) as HTMLSelectElement;
  const userIn = h("input#runs-user", { value: user, placeholder: "user id", size: 12, disabled: all }) as HTMLInputElement;
  const allBox = h("input#runs-all", { type: "checkbox", checked: all }) as HTMLInputElement;
  const go = () => navigate(href("runs", { app: appSel.value, user: userIn.value.trim(), all: allBox.checked ? "1" : undefined }), true);
  appSel.addEventListener("change", go);
  userIn.addEventListener("change", go);
  allBox.addEventListener("change", go);
  const rows = h("tbody#runs-rows");
  const stamp = h("span.hint#runs-stamp");
  const req = () => ({ appName: app, userId: all ? "" : user, statuses: activeStatuses, pageSize: 50 });
  const refresh = async () => {
    const resp = await runner.listRuns(req(), { signal });
    replace(rows, resp.runs.length ? resp.runs.map((r) => runRow(r, () => void refresh())) : h("tr", h("td.hint", { colspan: 8 }, "No active runs.")));
    replace(stamp, `${resp.runs.length}${resp.nextPageToken ? "+" : ""} active · refreshed ${new Date().toLocaleTimeString()}`);
  };
  replace(root, section("Runs board", [h("button#runs-refresh", { type: "button", onclick: () => void refresh().catch((e) => showError(e)) }, "Refresh"), rpcButton(RunnerService, "listRuns", ListRunsRequestSchema, req)],
    h("div.row", h("label", "App ", appSel), h("label", "User ", userIn), h("label", allBox, " all users (admins)"), h("span.grow"), stamp),
    h("table.list", h("thead", h("tr", h("th", "status"), h("th", "run"), h("th", "user / session"), h("th", "waits on"), h("th", "age"), h("th", "tokens"), h("th", "cost"), h("th", ""))), rows)));
  if (!app || (!user && !all)) {
    replace(rows, h("tr", h("td.hint", { colspan: 8 }, "Pick an app and a user (or all users).")));
    return;
  }
  await refresh();
  poll(signal, refreshMs, refresh);
}

function runRow(r: Run, changed: () => void): HTMLElement {
  return h("tr", { "data-run": r.runId, "data-status": statusName(r.status) },
    h("td", h(`span.status.s-${statusName(r.status).toLowerCase()}`, statusName(r.status))),
    h("td", link(href(pathOf`runs/${r.runId}`), h("code", shortId(r.runId)))),
    h("td", `${r.userId} / `, link(href(sessionPath(r)), h("code", shortId(r.sessionId)))),
    h("td", r.pendingCallIds.length ? `${r.pendingCallIds.length} call${r.pendingCallIds.length > 1 ? "s" : ""}` : ""),
    h("td", fmtAge(date(r.createTime))),
    h("td", fmtTokens(r.usage)),
    h("td", fmtCost(r.cost)),
    h("td.actions",
      r.status === RunStatus.INPUT_REQUIRED ? link(href(sessionPath(r)), "Answer") : link(href(pathOf`runs/${r.runId}`), "Attach"),
      h("button.danger", { type: "button", onclick: () => void cancel(r.runId, changed) }, "Cancel")));
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
  const tree = (await runner.listApps({}, { signal })).apps.find((a) => a.name === got.appName)?.rootAgent;
  const graph = h("div#agent-graph.graph-box");
  const trace = new TraceView(id, signal, (spans) => { if (tree) replace(graph, agentGraph(tree, pathOfTrace(spans))); });
  replace(root, section(`Run ${id}`, [rpcButton(RunnerService, "attachRun", AttachRunRequestSchema, () => ({ runId: id })), rpcButton(RunnerService, "getRun", GetRunRequestSchema, () => ({ runId: id }), "RPC: get"), rpcButton(RunnerService, "cancelRun", CancelRunRequestSchema, () => ({ runId: id }), "RPC: cancel")], head),
    trace.el, tree ? section("Agent graph", [], h("p.hint", "The app's agents; the ones this run visited and the hand-overs it took are highlighted, those still running dashed."), graph) : null,
    live, h("h3", "Events of the run, newest first"), events);
  const retrace = () => void trace.refresh().catch((e) => { if (!signal.aborted) showError(e); });
  retrace();
  const release = tryOpenStream();
  if (!release) {
    live.append(h("p.hint", "Two streams are open in this tab already; showing the run's record only."));
    if (isActive(got.status)) poll(signal, refreshMs, () => trace.refresh());
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
        retrace();
      }
      else if (p.case === "error") live.append(h("div.error-text", `agent error ${p.value.code}: ${p.value.message}`));
      else if (p.case === "event" && p.value.partial) {
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
        retrace();
      }
    }
  } catch (e) {
    if (!signal.aborted) showError(e);
  } finally {
    release();
  }
}
