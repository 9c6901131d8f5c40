// An admin's list of an app's users (ListUsers, admins only): each with
// how many sessions they have and when one last changed, a click away
// from their sessions. Anyone else is told they may not.
import { SessionService, ListUsersRequestSchema } from "../../../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import { date, runner, sessions } from "../api.js";
import { fmtAge, h, replace } from "../dom.js";
import { href, link, navigate, pathOf, section, showError } from "../ui.js";
import { rpcButton } from "../rpc.js";

export async function usersView(root: HTMLElement, signal: AbortSignal, app: string): Promise<void> {
  if (!app) {
    const apps = await runner.listApps({}, { signal });
    app = apps.apps[0]?.name ?? "";
  }
  const pick = h("select#users-app", { onchange: (e: Event) => navigate(href("users", { app: (e.target as HTMLSelectElement).value })) },
    h("option", { value: app }, app));
  void runner.listApps({}, { signal }).then((r) => replace(pick, r.apps.map((a) => h("option", { value: a.name, selected: a.name === app }, a.name)))).catch(() => {});
  const rows = h("tbody#user-rows");
  const more = h("button#users-more", { type: "button", hidden: true }, "Load more") as HTMLButtonElement;
  let next = "";
  const load = async (token: string) => {
    const resp = await sessions.listUsers({ appName: app, pageSize: 100, pageToken: token }, { signal });
    for (const u of resp.users) {
      rows.append(h("tr", { "data-user": u.userId },
        h("td", link(href(pathOf`apps/${app}/users/${u.userId}/sessions`), h("code", u.userId))),
        h("td", String(u.sessionCount)),
        h("td", u.lastUpdateTime ? `${fmtAge(date(u.lastUpdateTime))} ago` : ""),
        h("td.actions", link(href("runs", { app, user: u.userId }), "runs"), " ", link(href("usage", { app, user: u.userId }), "usage"))));
    }
    if (!token && !resp.users.length) rows.append(h("tr", h("td.hint", { colspan: 4 }, "No user has a session in this app.")));
    next = resp.nextPageToken;
    more.hidden = !next;
  };
  more.addEventListener("click", () => void load(next).catch((e) => showError(e)));
  replace(root, section("Users", [pick, rpcButton(SessionService, "listUsers", ListUsersRequestSchema, () => ({ appName: app, pageSize: 100 }))],
    h("p.hint", "Users with sessions in the app (admins only)."),
    h("div.scroll-x", h("table.list", h("thead", h("tr", h("th", "user"), h("th", "sessions"), h("th", "last change"), h("th", ""))), rows)), more));
  try {
    await load("");
  } catch (e) {
    replace(rows, h("tr#users-denied", h("td.hint", { colspan: 4 }, "This list is for admins.")));
    showError(e);
  }
}
