// Usage: GetUsage's daily totals by model for an app (and a user), with
// the period's total. Per run and per session figures are on the runs and
// on the session's usage tab; per model call on each event.
import { UsageService, GetUsageRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/usage_service_pb.js";
import { fmtCost, runner, usage } from "../api.js";
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
  replace(root, section("Usage", [rpcButton(UsageService, "getUsage", GetUsageRequestSchema, () => req)],
    h("div.row", h("label", "App ", appSel), h("label", "User ", userIn)),
    h("p#usage-total", `${resp.startDate} to ${resp.endDate}: ${t?.modelCalls ?? 0} model calls, ${t?.usage?.totalTokenCount ?? 0} tokens, ${fmtCost(t?.cost) || "no cost"}.`),
    h("table.list#usage-days", h("thead", h("tr", h("th", "day"), h("th", "model"), h("th", "calls"), h("th", "prompt"), h("th", "output"), h("th", "total"), h("th", "cost"))),
      h("tbody", resp.days.length ? resp.days.map((d) => h("tr",
        h("td", d.date), h("td", d.model), h("td", String(d.spend?.modelCalls ?? 0)),
        h("td", String(d.spend?.usage?.promptTokenCount ?? 0)), h("td", String(d.spend?.usage?.candidatesTokenCount ?? 0)),
        h("td", String(d.spend?.usage?.totalTokenCount ?? 0)), h("td", fmtCost(d.spend?.cost)))) : h("tr", h("td.hint", { colspan: 7 }, "No model calls in this period."))))));
}
