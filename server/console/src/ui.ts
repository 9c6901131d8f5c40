// What every view shares: navigation inside the base path, the error
// box, and the sign-in form an UNAUTHENTICATED answer brings up.
import { Code } from "@connectrpc/connect";
import { errCode, errText, setToken } from "./api.js";
import { h, replace } from "./dom.js";

const basePath = new URL(".", document.baseURI).pathname; // "/" or "/prefix/"

// route is the path below the base, without slashes at either end.
export function route(): string {
  const p = location.pathname.startsWith(basePath) ? location.pathname.slice(basePath.length) : "";
  return p.replace(/^\/+|\/+$/g, "");
}

// pathOf builds a path below the base from a template, each value (an
// id, which may hold "/" or "%") encoded as one segment of its own:
// pathOf`apps/${app}/users/${user}`.
export function pathOf(parts: TemplateStringsArray, ...ids: string[]): string {
  return parts.reduce((out, s, i) => out + s + (i < ids.length ? encodeURIComponent(ids[i]) : ""), "");
}

// href is the URL of a path below the base (built by pathOf when it holds
// ids), with a query.
export function href(path: string, query?: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v) q.set(k, v);
  const qs = q.toString();
  return basePath + path + (qs ? "?" + qs : "");
}

// segments are the route's segments, decoded; a malformed escape (a URL
// typed by hand) is kept as it is rather than failing the page.
export function segments(): string[] {
  return route().split("/").map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
}

let onNavigate: () => void = () => {};
export function setNavigateHandler(f: () => void): void {
  onNavigate = f;
}

export function navigate(to: string, replaceState = false): void {
  if (replaceState) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  onNavigate();
}

// link is an <a> that navigates in place (and still opens in a new tab).
export function link(to: string, ...children: (Node | string)[]): HTMLElement {
  return h("a", {
    href: to,
    onclick: (e: MouseEvent) => {
      if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      navigate(to);
    },
  }, ...children);
}

// showError puts a failed call in the page: never a blank view. An
// UNAUTHENTICATED answer asks for a token instead.
export function showError(e: unknown, where?: HTMLElement): void {
  console.warn(e);
  if (errCode(e) === Code.Unauthenticated) {
    signIn(errText(e));
    return;
  }
  const box = h("div.error", { role: "alert" },
    h("b", errCode(e) === Code.PermissionDenied ? "Not allowed. " : "Failed. "),
    h("span.error-text", errText(e)),
    h("button.close", { type: "button", onclick: () => box.remove() }, "×"));
  const target = where ?? document.getElementById("errors");
  target?.appendChild(box);
}

export function clearErrors(): void {
  const errs = document.getElementById("errors");
  if (errs) errs.replaceChildren();
}

export function signIn(why: string): void {
  const dlg = document.getElementById("signin")!;
  const input = h("input#token", { type: "password", placeholder: "bearer token", autocomplete: "off", size: 40 }) as HTMLInputElement;
  replace(
    dlg,
    h("form.signin-box", {
      onsubmit: (e: Event) => {
        e.preventDefault();
        setToken(input.value.trim());
        dlg.classList.remove("open");
        onNavigate();
      },
    },
      h("h2", "Sign in"),
      h("p", "This server needs a token (a principal of its --auth-file). It stays in this tab only (sessionStorage)."),
      h("p.hint", why),
      input,
      h("div.row", h("button#signin-submit", { type: "submit" }, "Sign in"))),
  );
  dlg.classList.add("open");
  input.focus();
}

// section is a titled block with optional actions on the right.
export function section(title: string, actions: (Node | null)[], ...body: (Node | string | null)[]): HTMLElement {
  return h("section.card", h("div.row.head", h("h2", title), h("span.grow"), ...actions), ...body);
}

// poll calls f every ms until signal aborts; f's errors are shown once
// and polling goes on, so a restarted server is picked up again.
export function poll(signal: AbortSignal, ms: number, f: () => Promise<void>): void {
  let timer = 0;
  const tick = async () => {
    if (signal.aborted) return;
    try {
      await f();
    } catch (e) {
      if (!signal.aborted) console.warn("poll:", e);
    }
    if (!signal.aborted) timer = window.setTimeout(tick, ms);
  };
  timer = window.setTimeout(tick, ms);
  signal.addEventListener("abort", () => clearTimeout(timer));
}
