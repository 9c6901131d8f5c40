// The console: a left nav, a router over the base path (deep links load
// index.html, see server/console), and one view at a time. A view gets an
// AbortSignal that ends its polls and streams when one navigates away.
import "./style.css";
import "./look.css";
import { probeAuth, rememberUser, rememberedUser, token, setToken } from "./api.js";
import { h, replace } from "./dom.js";
import { clearErrors, href, link, pathOf, route, segments, setNavigateHandler, showError } from "./ui.js";
import { appsView } from "./views/apps.js";
import { sessionsView } from "./views/sessions.js";
import { sessionView } from "./views/session.js";
import { runsView, runView } from "./views/runs.js";
import { usageView } from "./views/usage.js";
import { schedulesView } from "./views/schedules.js";
import { evalsView, evalView } from "./views/evals.js";
import { usersView } from "./views/users.js";
import { applyTheme, themeButton } from "./theme.js";
import { installShortcuts } from "./shortcuts.js";

let current: AbortController | undefined;

function layout(): void {
  const user = h("input#user", { placeholder: "user id", value: rememberedUser(), size: 12, title: "The user whose sessions and runs the console shows (remembered)" }) as HTMLInputElement;
  user.addEventListener("change", () => {
    rememberUser(user.value.trim());
    render();
  });
  document.body.replaceChildren(
    h("nav#nav",
      h("div.brand", "agentrunner"),
      h("div#nav-links"),
      h("label.user", "User", user),
      h("div#auth-state"),
      h("div.nav-tools", themeButton(), h("button#shortcuts-help", { type: "button", title: "Keyboard shortcuts (?)", onclick: () => document.dispatchEvent(new KeyboardEvent("keydown", { key: "?" })) }, "?")),
    ),
    h("main",
      h("div#banner"),
      h("div#errors"),
      h("div#view"),
    ),
    h("div#rpc-panel.overlay"),
    h("div#signin.overlay"),
    h("pre#clipboard", { hidden: true }),
  );
}

function navLinks(): void {
  const r = route();
  const app = localStorage.getItem("agentrunner.app") ?? "";
  const user = rememberedUser();
  const items: [string, string, string][] = [
    ["Apps", href("apps"), "apps"],
    ["Sessions", app && user ? href(pathOf`apps/${app}/users/${user}/sessions`) : href("apps"), "sessions"],
    ["Runs", href("runs", { app, user }), "runs"],
    ["Usage", href("usage", { app, user }), "usage"],
    ["Schedules", href("schedules", { app, user }), "schedules"],
    ["Evals", href("evals", { app, user }), "evals"],
    ["Users", href("users", { app }), "users"],
  ];
  const active = r.startsWith("runs") ? "runs" : r.startsWith("usage") ? "usage" : r.startsWith("schedules") ? "schedules" : r.startsWith("evals") ? "evals" : r.startsWith("users") ? "users" : r.includes("/sessions") ? "sessions" : "apps";
  replace(document.getElementById("nav-links")!, items.map(([label, to, key]) => {
    const a = link(to, label);
    a.id = `nav-${key}`;
    if (key === active) a.classList.add("active");
    return a;
  }));
  const st = document.getElementById("auth-state")!;
  replace(st, token() ? h("div", h("span.hint", "signed in "), h("button", { type: "button", id: "signout", onclick: () => { setToken(""); location.reload(); } }, "Sign out")) : null);
}

async function render(): Promise<void> {
  current?.abort();
  current = new AbortController();
  const signal = current.signal;
  clearErrors();
  navLinks();
  const view = document.getElementById("view")!;
  view.replaceChildren(h("p.hint", "Loading…"));
  const seg = segments();
  const q = new URLSearchParams(location.search);
  try {
    if (seg[0] === "apps" && seg[2] === "users" && seg[4] === "sessions" && seg[5]) {
      remember(seg[1], seg[3]);
      await sessionView(view, signal, seg[1], seg[3], seg[5], seg[6] ?? "chat");
    } else if (seg[0] === "apps" && seg[2] === "users" && seg[4] === "sessions") {
      remember(seg[1], seg[3]);
      await sessionsView(view, signal, seg[1], seg[3]);
    } else if (seg[0] === "runs" && seg[1]) {
      await runView(view, signal, seg[1]);
    } else if (seg[0] === "runs") {
      await runsView(view, signal, q.get("app") ?? "", q.get("user") ?? rememberedUser(), q.get("all") === "1", q.get("status") ?? undefined, q.get("sort") ?? undefined);
    } else if (seg[0] === "evals" && seg[1]) {
      await evalView(view, signal, seg[1], q.get("app") ?? "", q.get("user") ?? rememberedUser());
    } else if (seg[0] === "evals") {
      await evalsView(view, signal, q.get("app") ?? "", q.get("user") ?? "");
    } else if (seg[0] === "users") {
      await usersView(view, signal, q.get("app") ?? "");
    } else if (seg[0] === "usage") {
      await usageView(view, signal, q.get("app") ?? "", q.get("user") ?? "");
    } else if (seg[0] === "schedules") {
      await schedulesView(view, signal, q.get("app") ?? "", q.get("user") ?? "");
    } else {
      await appsView(view, signal, seg[0] === "apps" ? seg[1] : undefined);
    }
  } catch (e) {
    if (signal.aborted) return;
    view.replaceChildren(h("p.hint", "This view could not load. ", h("button#retry", { type: "button", onclick: () => void render() }, "Retry")));
    showError(e);
  }
}

function remember(app: string, user: string): void {
  localStorage.setItem("agentrunner.app", app);
  if (user !== rememberedUser()) {
    rememberUser(user);
    (document.getElementById("user") as HTMLInputElement).value = user;
  }
  navLinks();
}

async function banner(): Promise<void> {
  try {
    if ((await probeAuth()) === "none") {
      replace(document.getElementById("banner")!, h("div.banner#noauth", "This server has no authentication: anyone who reaches this port can use it (see docs/operations.md)."));
    }
  } catch {
    /* the view shows the error */
  }
}

applyTheme();
layout();
installShortcuts();
setNavigateHandler(() => void render());
window.addEventListener("popstate", () => void render());
void banner();
void render();
