// Keyboard shortcuts for the common moves; "?" lists them. None fires
// while one types in a field, except Escape.
import { h, replace } from "./dom.js";
import { toggleTheme } from "./theme.js";

const keys: [string, string, () => void][] = [
  ["/", "search this session's events", () => focus("#search-text")],
  ["c", "write a message", () => focus("#chat-input")],
  ["j", "next (older) event in the timeline", () => step(1)],
  ["k", "previous (newer) event in the timeline", () => step(-1)],
  ["i", "conversation or inspector (narrow screens)", () => {
    const s = document.querySelector(".split");
    s?.setAttribute("data-pane", s.getAttribute("data-pane") === "inspector" ? "conversation" : "inspector");
  }],
  ["t", "light or dark theme", toggleTheme],
  ["?", "this list", () => help()],
];

function focus(sel: string): void {
  const el = document.querySelector<HTMLElement>(sel);
  if (!el) return;
  el.closest(".split")?.setAttribute("data-pane", sel === "#chat-input" ? "conversation" : "inspector");
  el.focus();
}

// step moves the timeline by one event card.
function step(d: number): void {
  const tl = document.getElementById("timeline");
  if (!tl) return;
  const cards = [...tl.querySelectorAll<HTMLElement>(".vrow")].sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top);
  const top = tl.getBoundingClientRect().top;
  const i = cards.findIndex((c) => c.getBoundingClientRect().bottom > top + 4);
  const to = cards[Math.max(0, i + d)];
  if (to) tl.scrollTop += to.getBoundingClientRect().top - top;
}

function help(): void {
  const panel = document.getElementById("rpc-panel")!;
  replace(panel, h("div.rpc-box#shortcuts",
    h("div.row", h("h3", "Keyboard shortcuts"), h("span.grow"), h("button", { type: "button", onclick: () => panel.classList.remove("open") }, "Close")),
    h("table", keys.map(([k, what]) => h("tr", h("td", h("kbd", k)), h("td", what))), h("tr", h("td", h("kbd", "Esc")), h("td", "close a panel, leave a field")))));
  panel.classList.add("open");
}

export function installShortcuts(): void {
  document.addEventListener("keydown", (e) => {
    const t = e.target as HTMLElement;
    if (e.key === "Escape") {
      for (const o of document.querySelectorAll(".overlay.open")) o.classList.remove("open");
      if (t.matches("input, textarea, select")) t.blur();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || t.matches("input, textarea, select, [contenteditable]")) return;
    const k = keys.find(([key]) => key === e.key);
    if (!k) return;
    e.preventDefault();
    k[2]();
  });
}
