// Light and dark: the page follows prefers-color-scheme until one picks a
// theme with the toggle (or "t"), which is remembered (localStorage).
import { h } from "./dom.js";

const key = "agentrunner.theme";

export function applyTheme(): void {
  const t = localStorage.getItem(key);
  if (t === "dark" || t === "light") document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
}

export function isDark(): boolean {
  const t = document.documentElement.dataset.theme;
  return t ? t === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
}

export function toggleTheme(): void {
  localStorage.setItem(key, isDark() ? "light" : "dark");
  applyTheme();
  label();
}

function label(): void {
  const b = document.getElementById("theme-toggle");
  if (b) b.textContent = isDark() ? "☀ Light" : "☾ Dark";
}

export function themeButton(): HTMLElement {
  const b = h("button#theme-toggle", { type: "button", title: "Light or dark (t)", onclick: toggleTheme });
  queueMicrotask(label);
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", label);
  return b;
}
