// Evals: EvalService's stored evaluations of an app (sets, runs, pass
// counts), one evaluation's cases with each turn's expected and actual tool
// calls and response side by side and links to the turn's session and run,
// running an eval set file against the app, and saving a session as an
// eval case (an .evalset.json download in ADK's format).
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { EvalService, ListEvalRunsRequestSchema, GetEvalRunRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/eval_service_pb.js";
import type { EvalCaseResult, EvalRun } from "../../../../gen/ts/agentrunner/v1/eval_pb.js";
import type { FunctionCall } from "../../../../gen/ts/agentrunner/v1/content_pb.js";
import type { Event } from "../../../../gen/ts/agentrunner/v1/event_pb.js";
import { baseUrl, rememberedUser, runner, sessions, token } from "../api.js";
import { download, fmtTime, h, replace } from "../dom.js";
import { href, link, navigate, pathOf, section, showError } from "../ui.js";
import { rpcButton } from "../rpc.js";

const auth: Interceptor = (next) => async (req) => {
  const t = token();
  if (t) req.header.set("authorization", `Bearer ${t}`);
  return next(req);
};
const evals = createClient(EvalService, createConnectTransport({ baseUrl, interceptors: [auth] }));

const passed = (r: EvalRun) => r.cases.filter((c) => c.passed).length;

// evalsView lists an app's evaluations of a user, newest first, with a form
// that runs an eval set file and one that saves a session as a case.
export async function evalsView(root: HTMLElement, signal: AbortSignal, app: string, user: string): Promise<void> {
  const apps = (await runner.listApps({}, { signal })).apps;
  if (!app) app = localStorage.getItem("agentrunner.app") || apps[0]?.name || "";
  if (!user) user = rememberedUser();
  const appSel = h("select#evals-app", apps.map((a) => h("option", { value: a.name, selected: a.name === app }, a.name))) as HTMLSelectElement;
  const userIn = h("input#evals-user", { value: user, size: 16 }) as HTMLInputElement;
  const go = () => navigate(href("evals", { app: appSel.value, user: userIn.value.trim() }), true);
  appSel.addEventListener("change", go);
  userIn.addEventListener("change", go);
  const req = { appName: app, userId: user };
  const list = (await evals.listEvalRuns(req, { signal })).evalRuns;
  replace(root, section("Evaluations", [rpcButton(EvalService, "listEvalRuns", ListEvalRunsRequestSchema, () => req)],
    h("div.row", h("label", "App ", appSel), h("label", "User ", userIn)),
    h("table.list#evals-list", h("thead", h("tr", h("th", "evaluation"), h("th", "created"), h("th", "eval set"), h("th", "repeats"), h("th", "passed"), h("th", "label"))),
      h("tbody", list.length ? list.map((r) => h("tr", { "data-eval": r.evalRunId, "data-passed": r.passed ? "1" : "0" },
        h("td", link(href(pathOf`evals/${r.evalRunId}`, { app, user }), h("code", r.evalRunId))),
        h("td", fmtTime(r.createTime ? timestampDate(r.createTime) : undefined)),
        h("td", r.evalSetId), h("td", String(r.repeats)),
        h(r.passed ? "td" : "td.error-text", `${passed(r)}/${r.cases.length}`), h("td", r.label))) :
        h("tr", h("td.hint", { colspan: 6 }, "No evaluations yet: run one below, or with agentrunner eval."))))),
  section("Run an eval set", [], runForm(app, user)),
  section("Save a session as an eval case", [], saveForm(app, user)));
}

// runForm runs an .evalset.json or .test.json (and an optional
// test_config.json) against the app, then opens the result.
function runForm(app: string, user: string): HTMLElement {
  const setIn = h("input#evals-file", { type: "file", accept: ".json" }) as HTMLInputElement;
  const cfgIn = h("input#evals-config", { type: "file", accept: ".json" }) as HTMLInputElement;
  const repeats = h("input#evals-repeats", { type: "number", value: "1", min: "1", max: "20", size: 3 }) as HTMLInputElement;
  const status = h("span.hint#evals-run-status");
  const run = async () => {
    const f = setIn.files?.[0];
    if (!f) return showError(new Error("choose an eval set file"));
    replace(status, "Running…");
    try {
      const cfg = cfgIn.files?.[0];
      const resp = await evals.runEval({
        appName: app, userId: user, evalSet: new Uint8Array(await f.arrayBuffer()), evalSetName: f.name,
        config: cfg ? new Uint8Array(await cfg.arrayBuffer()) : new Uint8Array(), repeats: Number(repeats.value) || 1,
      });
      navigate(href(pathOf`evals/${resp.evalRun!.evalRunId}`, { app, user }));
    } catch (e) {
      replace(status, "");
      showError(e);
    }
  };
  return h("div.row", h("label", "Eval set ", setIn), h("label", "test_config.json ", cfgIn), h("label", "Repeats ", repeats),
    h("button#evals-run", { type: "button", onclick: () => void run() }, "Run"), status);
}

// saveForm downloads a session of the user as an eval set of one case.
function saveForm(app: string, user: string): HTMLElement {
  const sid = h("input#evals-session", { placeholder: "session id", size: 24 }) as HTMLInputElement;
  const save = async () => {
    try {
      const id = sid.value.trim();
      const events = (await sessions.listEvents({ appName: app, userId: user, sessionId: id, pageSize: 1000 })).events;
      const set = { eval_set_id: id, eval_cases: [sessionCase(app, user, id, events)] };
      download(`${id}.evalset.json`, new Blob([JSON.stringify(set, null, 2) + "\n"], { type: "application/json" }));
    } catch (e) {
      showError(e);
    }
  };
  return h("div.row", h("label", "Session ", sid), h("button#evals-save", { type: "button", onclick: () => void save() }, "Download as .evalset.json"),
    h("span.hint", "Each user message is a turn; its tool calls and final response are what the case expects (as agentrunner eval save-session)."));
}

type Turn = { user_content: unknown; final_response?: unknown; intermediate_data: { tool_uses: { name: string; args: unknown }[] } };

// sessionCase is a session's turns as an ADK eval case: a user message with
// text starts a turn; every function call after it is a tool use, and the
// last event with text and no call or response is the final response.
export function sessionCase(app: string, user: string, id: string, events: Event[]): unknown {
  const turns: Turn[] = [];
  for (const ev of events) {
    if (ev.partial) continue;
    const parts = ev.content?.parts ?? [];
    const text = parts.filter((p) => p.data.case === "text" && !p.thought).map((p) => p.data.value as string).join("\n");
    if (ev.author === "user") {
      if (text) turns.push({ user_content: { role: "user", parts: [{ text }] }, intermediate_data: { tool_uses: [] } });
      continue;
    }
    const t = turns[turns.length - 1];
    if (!t) continue;
    const calls = parts.filter((p) => p.data.case === "functionCall").map((p) => p.data.value as FunctionCall);
    t.intermediate_data.tool_uses.push(...calls.map((c) => ({ name: c.name, args: c.args ?? {} })));
    if (!calls.length && !parts.some((p) => p.data.case === "functionResponse") && text) t.final_response = { role: "model", parts: [{ text }] };
  }
  return { eval_id: id, conversation: turns, session_input: { app_name: app, user_id: user, state: {} } };
}

// evalView shows one evaluation: a row per case with each metric's score
// against its threshold, then each case's turns, expected against actual.
export async function evalView(root: HTMLElement, signal: AbortSignal, id: string, app: string, user: string): Promise<void> {
  const req = { appName: app, userId: user, evalRunId: id };
  const r = (await evals.getEvalRun(req, { signal })).evalRun!;
  replace(root, section(`Evaluation ${r.evalRunId}`, [rpcButton(EvalService, "getEvalRun", GetEvalRunRequestSchema, () => req)],
    h("p#eval-summary", `${r.appName}, eval set ${r.evalSetId}, ${r.repeats} repeat(s), user ${r.userId}${r.label ? `, label ${r.label}` : ""}: `,
      h(r.passed ? "strong" : "strong.error-text", `${passed(r)} of ${r.cases.length} cases passed`)),
    h("table.list#eval-cases", h("thead", h("tr", h("th", "case"), h("th", "result"), ...r.criteria.map((c) => h("th", c.metric + (c.matchType && c.matchType !== "EXACT" ? ` (${c.matchType})` : ""))))),
      h("tbody", r.cases.map((c) => h("tr", { "data-case": c.evalId, "data-passed": c.passed ? "1" : "0" },
        h("td", c.evalId), h(c.passed ? "td" : "td.error-text", c.passed ? "PASS" : "FAIL"),
        ...c.metrics.map((m) => h(m.passed ? "td" : "td.error-text", `${m.score.toFixed(2)} / ${m.threshold.toFixed(2)}${m.error ? " " + m.error : ""}`)))))),
    link(href("evals", { app, user }), "← all evaluations")),
  ...r.cases.map((c) => caseDetail(r, c)));
}

const calls = (cs: FunctionCall[]) => cs.length ? cs.map((c) => `${c.name}(${JSON.stringify(c.args ?? {})})`).join(", ") : "(none)";

// caseDetail is a case's turns, repeat by repeat: what differs is marked,
// and each turn links to its session and to its run (its trace).
function caseDetail(r: EvalRun, c: EvalCaseResult): HTMLElement {
  return section(`${c.passed ? "PASS" : "FAIL"} ${c.evalId}`, [],
    ...c.repeats.map((rep, i) => h("div.eval-repeat", { "data-repeat": String(i + 1) },
      h("p", `Repeat ${i + 1}: session `, link(href(pathOf`apps/${r.appName}/users/${r.userId}/sessions/${rep.sessionId}`), h("code", rep.sessionId)),
        rep.error ? h("span.error-text", ` ${rep.error}`) : null),
      h("table.list.eval-turns", h("thead", h("tr", h("th", "turn"), h("th", ""), h("th", "expected"), h("th", "actual"), h("th", "scores"))),
        h("tbody", rep.invocations.flatMap((inv, t) => {
          const et = calls(inv.expectedToolUses), at = calls(inv.actualToolUses);
          const scores = Object.entries(inv.scores).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ");
          const turn = h("td", { rowspan: 3 }, String(t + 1), " ", inv.runId ? link(href(pathOf`runs/${inv.runId}`), "run") : null);
          return [
            h("tr", turn, h("td", "user"), h("td", { colspan: 2 }, inv.userText), h("td", { rowspan: 3 }, scores)),
            h("tr", { "data-differs": et === at ? "0" : "1" }, h("td", "tools"), h("td", h("code", et)), h(et === at ? "td" : "td.error-text", h("code", at))),
            h("tr", { "data-differs": inv.expectedResponse === inv.actualResponse ? "0" : "1" }, h("td", "response"), h("td", inv.expectedResponse),
              h(inv.expectedResponse === inv.actualResponse ? "td" : "td.error-text", inv.actualResponse)),
          ];
        }))))));
}
