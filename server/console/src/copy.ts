// Copy buttons for raw JSON. The last copied text is also on the page
// (#clipboard), for those (and tests) without clipboard access.
import { h } from "./dom.js";

export async function copyText(text: string): Promise<void> {
  const sink = document.getElementById("clipboard");
  if (sink) sink.textContent = text;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    /* no clipboard permission: the text is on the page */
  }
}

// copyButton copies what text() gives when clicked, and says so.
export function copyButton(text: () => string, label = "Copy"): HTMLElement {
  const b = h("button.copy", { type: "button", title: "Copy to the clipboard" }, label) as HTMLButtonElement;
  b.addEventListener("click", (e) => {
    e.preventDefault();
    e.stopPropagation();
    void copyText(text()).then(() => {
      b.textContent = "Copied";
      setTimeout(() => (b.textContent = label), 1200);
    });
  });
  return b;
}

// rawJson is a folded "raw JSON" block whose text is made when it is
// first opened (an event's JSON costs more than its card), with a copy
// button.
export function rawJson(text: () => string, cls = "details.raw"): HTMLElement {
  const pre = h("pre");
  const d = h(cls, h("summary", "raw JSON ", copyButton(text)), pre) as HTMLDetailsElement;
  d.addEventListener("toggle", () => {
    if (d.open && !pre.textContent) pre.textContent = text();
  });
  return d;
}
