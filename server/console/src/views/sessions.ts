// Sessions of an app and a user: paged from the server, filtered by id,
// newest first; create (with initial state), delete, export as JSON.
import { toJson, type JsonObject } from "@bufbuild/protobuf";
import {
  SessionService, ListSessionsRequestSchema, CreateSessionRequestSchema, DeleteSessionRequestSchema,
} from "../../../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import { EventSchema } from "../../../../gen/ts/agentrunner/v1/event_pb.js";
import { SessionSchema, type Session } from "../../../../gen/ts/agentrunner/v1/session_pb.js";
import { date, fmtCost, fmtTokens, sessions } from "../api.js";
import { download, fmtAge, h, replace } from "../dom.js";
import { href, link, pathOf, navigate, section, showError } from "../ui.js";
import { rpcButton } from "../rpc.js";

const pageSize = 25;

export async function sessionsView(root: HTMLElement, signal: AbortSignal, app: string, user: string): Promise<void> {
  const rows = h("tbody#session-rows");
  const more = h("button#sessions-more", { type: "button" }, "Load more") as HTMLButtonElement;
  const filter = h("input#session-filter", { placeholder: "filter by id", size: 24 }) as HTMLInputElement;
  let loaded: Session[] = [];
  let next = "";

  const draw = () => {
    const f = filter.value.trim();
    const shown = loaded.filter((s) => !f || s.sessionId.includes(f))
      .sort((a, b) => (date(b.updateTime)?.getTime() ?? 0) - (date(a.updateTime)?.getTime() ?? 0));
    replace(rows, shown.length ? shown.map((s) => sessionRow(app, user, s, () => {
      loaded = loaded.filter((x) => x !== s);
      draw();
    })) : h("tr", h("td.hint", { colspan: 6 }, f ? "No loaded session matches; Open goes to it by id." : "No sessions yet.")));
    more.hidden = !next;
  };
  const load = async (token: string) => {
    const resp = await sessions.listSessions({ appName: app, userId: user, pageSize, pageToken: token }, { signal });
    loaded = loaded.concat(resp.sessions);
    next = resp.nextPageToken;
    draw();
  };
  more.addEventListener("click", () => load(next).catch((e) => showError(e)));
  filter.addEventListener("input", draw);

  replace(root,
    section(`Sessions of ${user} in ${app}`, [
      rpcButton(SessionService, "listSessions", ListSessionsRequestSchema, () => ({ appName: app, userId: user, pageSize })),
    ],
      h("div.row", filter,
        h("button#session-open", { type: "button", onclick: () => filter.value.trim() && navigate(href(pathOf`apps/${app}/users/${user}/sessions/${filter.value.trim()}`)) }, "Open"),
        h("span.grow"), link(href(pathOf`apps/${app}`), "app ", app), link(href("runs", { app, user }), "runs board")),
      h("table.list", h("thead", h("tr", h("th", "session"), h("th", "updated"), h("th", "events"), h("th", "usage"), h("th", "cost"), h("th", ""))), rows),
      more),
    createForm(app, user),
  );
  await load("");
}

function sessionRow(app: string, user: string, s: Session, removed: () => void): HTMLElement {
  const del = h("button.danger", { type: "button" }, "Delete") as HTMLButtonElement;
  // Two clicks, not window.confirm: a dialog would block the page.
  del.addEventListener("click", async () => {
    if (del.dataset.armed !== "1") {
      del.dataset.armed = "1";
      del.textContent = "Really delete?";
      return;
    }
    try {
      await sessions.deleteSession({ appName: app, userId: user, sessionId: s.sessionId });
      removed();
    } catch (e) {
      showError(e);
    }
  });
  return h("tr", { "data-session": s.sessionId },
    h("td", link(href(pathOf`apps/${app}/users/${user}/sessions/${s.sessionId}`), h("code", s.sessionId))),
    h("td", { title: date(s.updateTime)?.toISOString() ?? "" }, fmtAge(date(s.updateTime)), " ago"),
    h("td", String(s.lastSequence)),
    h("td", fmtTokens(s.usage)),
    h("td", fmtCost(s.cost)),
    h("td.actions",
      h("button", { type: "button", onclick: () => exportSession(app, user, s.sessionId).catch((e) => showError(e)) }, "Export"),
      rpcButton(SessionService, "deleteSession", DeleteSessionRequestSchema, () => ({ appName: app, userId: user, sessionId: s.sessionId }), "RPC"),
      del),
  );
}

function createForm(app: string, user: string): HTMLElement {
  const id = h("input#new-session-id", { placeholder: "id (empty: the server picks one)", size: 30 }) as HTMLInputElement;
  const state = h("textarea#new-session-state", { rows: 3, placeholder: '{"user:lang": "en"}' }) as HTMLTextAreaElement;
  const req = () => {
    const txt = state.value.trim();
    const st = txt ? (JSON.parse(txt) as JsonObject) : undefined;
    return { appName: app, userId: user, sessionId: id.value.trim(), state: st };
  };
  return section("New session", [rpcButton(SessionService, "createSession", CreateSessionRequestSchema, req)],
    h("form.stack", {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const resp = await sessions.createSession(req());
          navigate(href(pathOf`apps/${app}/users/${user}/sessions/${resp.session!.sessionId}`));
        } catch (err) {
          showError(err);
        }
      },
    }, id, h("label", "Initial state (JSON object; app: and user: keys update the shared scopes)", state), h("div.row", h("button#create-session", { type: "submit" }, "Create session"))));
}

// exportSession downloads a session and all its events as one JSON file,
// fetched page by page (1000 events a call) rather than in one response.
export async function exportSession(app: string, user: string, id: string): Promise<void> {
  const got = await sessions.getSession({ appName: app, userId: user, sessionId: id, numRecentEvents: 1 });
  const events: unknown[] = [];
  let token = "";
  for (let page = 0; page < 100_000; page++) {
    const resp = await sessions.listEvents({ appName: app, userId: user, sessionId: id, pageSize: 1000, pageToken: token });
    for (const ev of resp.events) events.push(toJson(EventSchema, ev));
    token = resp.nextPageToken;
    if (!token) break;
  }
  const doc = { session: toJson(SessionSchema, got.session!), events };
  download(`${app}-${user}-${id}.json`, new Blob([JSON.stringify(doc, null, 2)], { type: "application/json" }));
}
