// A tiny DOM helper: h("div.card#id", {onclick}, children...). No framework,
// so the bundle stays small and every node is plain DOM the tests can query.

export type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, unknown>;

export function h(tag: string, attrs?: Attrs | Child, ...children: Child[]): HTMLElement {
  const m = /^([a-z0-9]+)?((?:[.#][\w-]+)*)$/i.exec(tag);
  const el = document.createElement(m?.[1] || "div");
  for (const part of (m?.[2] ?? "").match(/[.#][\w-]+/g) ?? []) {
    if (part[0] === ".") el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  if (attrs !== undefined && (attrs === null || typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs as Child);
  } else if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v as EventListener);
      else if (k === "class") el.className = String(v);
      else if (k === "value" && "value" in el) (el as HTMLInputElement).value = String(v);
      else if (k === "checked") (el as HTMLInputElement).checked = Boolean(v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

export function json(v: unknown): string {
  return JSON.stringify(v, null, 2);
}

// fmtAge says how long ago a time was, in the largest sensible unit.
export function fmtAge(d: Date | undefined, now = Date.now()): string {
  if (!d) return "";
  const s = Math.max(0, Math.round((now - d.getTime()) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? (s % 60) + "s" : ""}`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d`;
}

export function fmtTime(d: Date | undefined): string {
  if (!d) return "";
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function download(name: string, blob: Blob): void {
  const a = h("a", { href: URL.createObjectURL(blob), download: name }) as HTMLAnchorElement;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

// blobImage is an <img> of blob's bytes. Its object URL is revoked once
// the image has loaded (or failed to): the element keeps what it decoded,
// and the URL would otherwise hold the bytes for as long as the page
// lives, one copy per event or preview ever shown.
export function blobImage(tag: string, blob: Blob, alt: string): HTMLImageElement {
  const url = URL.createObjectURL(blob);
  const revoke = () => URL.revokeObjectURL(url);
  return h(tag, { src: url, alt, onload: revoke, onerror: revoke }) as HTMLImageElement;
}
