// Schedules: an app's schedules (of the apps file and of the API), of one
// user or of every user (admins), each with its cron, its owner, its last
// firing and the run it started (or why none), and its next firing,
// refreshed every few seconds.
import { ScheduleService, ListSchedulesRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/schedule_service_pb.js";
import { MissedPolicy, ScheduleSource, type Schedule } from "../../../../gen/ts/agentrunner/v1/schedule_pb.js";
import { date, runner, schedules, shortId } from "../api.js";
import { h, replace } from "../dom.js";
import { href, link, navigate, poll, section } from "../ui.js";
import { rpcButton } from "../rpc.js";

export async function schedulesView(root: HTMLElement, signal: AbortSignal, app: string, user: string): Promise<void> {
  const apps = (await runner.listApps({}, { signal })).apps;
  if (!app) app = localStorage.getItem("agentrunner.app") || apps[0]?.name || "";
  const appSel = h("select#schedules-app", apps.map((a) => h("option", { value: a.name, selected: a.name === app }, a.name))) as HTMLSelectElement;
  const userIn = h("input#schedules-user", { value: user, placeholder: "owner (empty: every user)", size: 16 }) as HTMLInputElement;
  const go = () => navigate(href("schedules", { app: appSel.value, user: userIn.value.trim() }), true);
  appSel.addEventListener("change", go);
  userIn.addEventListener("change", go);
  const req = { appName: app, userId: user };
  const body = h("tbody");
  const fill = async () => replace(body, rows((await schedules.listSchedules(req, { signal })).schedules));
  await fill();
  replace(root, section("Schedules", [rpcButton(ScheduleService, "listSchedules", ListSchedulesRequestSchema, () => req)],
    h("div.row", h("label", "App ", appSel), h("label", "Owner ", userIn)),
    h("table.list#schedules",
      h("thead", h("tr", h("th", "schedule"), h("th", "owner"), h("th", "cron"), h("th", "zone"), h("th", "session"),
        h("th", "missed"), h("th", "last fire"), h("th", "last run"), h("th", "next fire"))),
      body),
    h("p.hint", "Schedules of the apps file are changed there; others with ScheduleService or `agentrunner schedules`.")));
  poll(signal, 5000, fill);
}

function rows(list: Schedule[]): HTMLElement[] {
  if (!list.length) return [h("tr", h("td.hint", { colspan: 9 }, "No schedules."))];
  return list.map((s) => h("tr", { "data-schedule": s.scheduleId },
    h("td", s.scheduleId, s.source === ScheduleSource.APPS_FILE ? h("span.hint", " (apps file)") : null),
    h("td", s.userId),
    h("td", h("code", s.cron)),
    h("td", s.timeZone || "UTC"),
    h("td", s.sessionId || h("span.hint", "fresh")),
    h("td", s.missedPolicy === MissedPolicy.RUN_ONCE ? "run once" : "skip"),
    h("td.last-fire", when(s.lastFireTime ? date(s.lastFireTime) : undefined)),
    h("td.last-run", s.lastError ? h("span.error-text", `refused: ${s.lastError}`) : s.lastRunId ? link(href(`runs/${encodeURIComponent(s.lastRunId)}`), shortId(s.lastRunId)) : "—"),
    h("td.next-fire", s.paused ? h("span.hint", "paused") : when(s.nextFireTime ? date(s.nextFireTime) : undefined))));
}

function when(d: Date | undefined): string {
  return d ? d.toLocaleString() : "—";
}
