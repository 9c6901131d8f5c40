// Apps: every app the server hosts with its agent tree (kind, model,
// tools with their schema and confirmation, transfer rules), the apps that
// could not start and why, and their budgets.
import { RunnerService, ListAppsRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import { AgentKind, ToolKind, type AgentInfo, type App } from "../../../../gen/ts/agentrunner/v1/agent_pb.js";
import type { BudgetLimit } from "../../../../gen/ts/agentrunner/v1/config_pb.js";
import { runner, rememberedUser } from "../api.js";
import { h, json, replace } from "../dom.js";
import { href, link, pathOf, section } from "../ui.js";
import { rpcButton } from "../rpc.js";
import { agentGraph } from "./graph.js";

function agentTree(a: AgentInfo): HTMLElement {
  const kind = (AgentKind[a.kind] ?? "").replace(/^AGENT_KIND_/, "").toLowerCase();
  const flags = [
    a.disallowTransferToParent ? "no transfer to parent" : "",
    a.disallowTransferToPeers ? "no transfer to peers" : "",
    a.maxIterations ? `max ${a.maxIterations} iterations` : "",
  ].filter(Boolean);
  return h("li.agent",
    h("div.agent-head", h("b", a.name), h("span.tag", kind), a.model ? h("span.tag.model", a.model) : null,
      flags.map((f) => h("span.tag.warn", f))),
    a.description ? h("div.hint", a.description) : null,
    a.transferTargets.length ? h("div.hint", "transfers to: ", a.transferTargets.join(", ")) : null,
    a.toolDetails.length
      ? h("ul.tools", a.toolDetails.map((t) =>
        h("li.tool",
          h("details",
            h("summary", h("code", t.name), " ", h("span.tag", (ToolKind[t.kind] ?? "").replace(/^TOOL_KIND_/, "").toLowerCase()),
              t.requireConfirmation ? h("span.tag.warn", "needs confirmation") : null, " ", h("span.hint", t.description)),
            t.parameters ? h("pre.schema", json(t.parameters)) : h("p.hint", "no parameters schema")))))
      : a.tools.length ? h("div.hint", "tools: ", a.tools.join(", ")) : null,
    a.subAgents.length ? h("ul.tree", a.subAgents.map(agentTree)) : null,
  );
}

function limit(name: string, l: BudgetLimit | undefined, currency: string): HTMLElement | null {
  if (!l || (!l.tokens && !l.cost)) return null;
  return h("tr", h("td", name), h("td", l.tokens ? String(l.tokens) : "—"), h("td", l.cost ? `${l.cost} ${currency}` : "—"));
}

function appCard(a: App, open: boolean): HTMLElement {
  const user = rememberedUser();
  const b = a.budgets;
  const budgets = b ? [limit("per run", b.run, a.currency), limit("per session", b.session, a.currency), limit("per user per day", b.userDaily, a.currency), limit("app per day", b.appDaily, a.currency)].filter(Boolean) : [];
  return h("section.card.app", { id: `app-${a.name}` },
    h("div.row.head",
      h("h2", link(href(pathOf`apps/${a.name}`), a.name)),
      a.unavailableReason ? h("span.tag.bad", "unavailable") : null,
      h("span.grow"),
      user ? link(href(pathOf`apps/${a.name}/users/${user}/sessions`), "Sessions →") : h("span.hint", "enter a user id to see sessions"),
      link(href("runs", { app: a.name, user }), "Runs →")),
    a.description ? h("p", a.description) : null,
    a.unavailableReason ? h("p.error-text", a.unavailableReason) : null,
    budgets.length ? h("table.budgets", h("tr", h("th", "budget"), h("th", "tokens"), h("th", "cost")), budgets) : null,
    a.rootAgent && open ? h("div.graph-box", agentGraph(a.rootAgent)) : null,
    a.rootAgent ? (open ? h("ul.tree", agentTree(a.rootAgent)) : h("details", h("summary", "agent tree"), h("ul.tree", agentTree(a.rootAgent)))) : null,
  );
}

export async function appsView(root: HTMLElement, signal: AbortSignal, only?: string): Promise<void> {
  const resp = await runner.listApps({}, { signal });
  const apps = only ? resp.apps.filter((a) => a.name === only) : resp.apps;
  if (only && apps.length === 0) throw new Error(`no app ${only}`);
  if (only) localStorage.setItem("agentrunner.app", only);
  replace(root,
    section(only ? `App ${only}` : "Apps", [rpcButton(RunnerService, "listApps", ListAppsRequestSchema, () => ({}))],
      apps.length ? null : h("p.hint", "No app is visible to you.")),
    apps.map((a) => appCard(a, Boolean(only) || apps.length <= 4)),
  );
}
