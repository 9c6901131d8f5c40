// Usage: GetUsage's daily totals by model for an app (and a user), with
// the period's total, and today's spend against the app's daily budgets.
// Per run and per session figures are on the runs and on the session's
// usage tab; per model call on each event.
import { UsageService, GetUsageRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/usage_service_pb.js";
import type { App } from "../../../../gen/ts/agentrunner/v1/agent_pb.js";
import type { BudgetLimit } from "../../../../gen/ts/agentrunner/v1/config_pb.js";
import type { Spend } from "../../../../gen/ts/agentrunner/v1/event_pb.js";
import { errText, fmtCost, runner, usage } from "../api.js";
import { h, replace } from "../dom.js";
import { href, navigate, section } from "../ui.js";
import { rpcButton } from "../rpc.js";

export async function usageView(root: HTMLElement, signal: AbortSignal, app: string, user: string): Promise<void> {
  const apps = (await runner.listApps({}, { signal })).apps;
  if (!app) app = localStorage.getItem("agentrunner.app") || apps[0]?.name || "";
  const appSel = h("select#usage-app", apps.map((a) => h("option", { value: a.name, selected: a.name === app }, a.name))) as HTMLSelectElement;
  const userIn = h("input#usage-user", { value: user, placeholder: "user id (empty: every user)", size: 16 }) as HTMLInputElement;
  const go = () => navigate(href("usage", { app: appSel.value, user: userIn.value.trim() }), true);
  appSel.addEventListener("change", go);
  userIn.addEventListener("change", go);
  const req = { appName: app, userId: user };
  const resp = await usage.getUsage(req, { signal });
  const t = resp.total;
  const budgets = await budgetsToday(apps.find((a) => a.name === app), user, signal);
  replace(root, section("Usage", [rpcButton(UsageService, "getUsage", GetUsageRequestSchema, () => req)],
    h("div.row", h("label", "App ", appSel), h("label", "User ", userIn)),
    budgets,
    h("p#usage-total", `${resp.startDate} to ${resp.endDate}: ${t?.modelCalls ?? 0} model calls, ${t?.usage?.totalTokenCount ?? 0} tokens, ${fmtCost(t?.cost) || "no cost"}.`),
    h("table.list#usage-days", h("thead", h("tr", h("th", "day"), h("th", "model"), h("th", "calls"), h("th", "prompt"), h("th", "output"), h("th", "total"), h("th", "cost"))),
      h("tbody", resp.days.length ? resp.days.map((d) => h("tr",
        h("td", d.date), h("td", d.model), h("td", String(d.spend?.modelCalls ?? 0)),
        h("td", String(d.spend?.usage?.promptTokenCount ?? 0)), h("td", String(d.spend?.usage?.candidatesTokenCount ?? 0)),
        h("td", String(d.spend?.usage?.totalTokenCount ?? 0)), h("td", fmtCost(d.spend?.cost)))) : h("tr", h("td.hint", { colspan: 7 }, "No model calls in this period."))))));
}

// budgetsToday shows what was spent today (UTC) against the app's daily
// budgets: the user's against user_daily (when a user is chosen), the
// app's against app_daily (every user together, which only an admin may
// read: otherwise the row says so). null when the app has neither.
async function budgetsToday(app: App | undefined, user: string, signal: AbortSignal): Promise<HTMLElement | null> {
  const b = app?.budgets;
  const set = (l?: BudgetLimit) => !!l && (l.tokens > 0n || l.cost > 0);
  if (!app || !b || (!set(b.userDaily) && !set(b.appDaily))) return null;
  const today = new Date().toISOString().slice(0, 10);
  const rows: HTMLElement[] = [];
  const row = async (name: string, l: BudgetLimit, userId: string) => {
    try {
      const total = (await usage.getUsage({ appName: app.name, userId, startDate: today, endDate: today }, { signal })).total;
      rows.push(budgetRow(name, l, total, app.currency));
    } catch (e) {
      rows.push(h("tr", h("td", name), h("td.hint", { colspan: 3 }, errText(e))));
    }
  };
  if (set(b.userDaily) && user) await row(`user ${user} today`, b.userDaily!, user);
  if (set(b.appDaily)) await row("the app today", b.appDaily!, "");
  if (!rows.length) return h("p.hint", "Choose a user to see their spend against the daily budget.");
  return h("table.budgets#usage-budgets", h("tr", h("th", "budget"), h("th", "tokens"), h("th", "cost"), h("th", "used")), rows);
}

// budgetRow is one budget's line: spent of limit, in tokens and money,
// and the larger share used.
function budgetRow(name: string, l: BudgetLimit, s: Spend | undefined, currency: string): HTMLElement {
  const tokens = s?.totalTokens ?? 0n;
  const micros = Number(s?.cost?.micros ?? 0n);
  const shares: number[] = [];
  if (l.tokens > 0n) shares.push(Number(tokens) / Number(l.tokens));
  if (l.cost > 0) shares.push(micros / 1e6 / l.cost);
  const used = Math.max(...shares);
  return h("tr", { "data-budget": name, "data-reached": used >= 1 ? "1" : "0" },
    h("td", name),
    h("td", l.tokens > 0n ? `${tokens} of ${l.tokens}` : "—"),
    h("td", l.cost > 0 ? `${fmtCost(s?.cost) || "0 " + currency} of ${l.cost} ${currency}` : "—"),
    h(used >= 1 ? "td.error-text" : "td", `${Math.round(used * 100)}%${used >= 1 ? " (reached: runs are refused)" : ""}`));
}
