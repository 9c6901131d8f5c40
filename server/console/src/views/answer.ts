// Answers to the calls a run waits on. A confirmation (the reserved
// request_confirmation call) gets Approve and Reject, which answer
// {"confirmed": true|false}. A client-executed tool gets its arguments laid
// out by the tool's JSON schema (names, types, descriptions) and a result
// form: fields, or raw JSON. ToolInfo has no schema for results, so the
// fields start from a "result" key the user can rename or add to; a
// JSON object pasted there is the whole result.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { FunctionCall } from "../../../../gen/ts/agentrunner/v1/content_pb.js";
import type { ToolInfo } from "../../../../gen/ts/agentrunner/v1/agent_pb.js";
import { append, h, json } from "../dom.js";

export type Answer = { response: JsonObject };

type Schema = { type?: string; description?: string; properties?: Record<string, Schema>; required?: string[]; enum?: JsonValue[]; pattern?: string };

export function answerForm(fc: FunctionCall, tools: Map<string, ToolInfo>, done: (a: Answer) => void): HTMLElement {
  if (fc.name === "request_confirmation") return confirmForm(fc, done);
  return toolForm(fc, tools.get(fc.name), done);
}

function confirmForm(fc: FunctionCall, done: (a: Answer) => void): HTMLElement {
  const args = (fc.args ?? {}) as JsonObject;
  const box = h("div.answer.confirm", { "data-call-id": fc.id });
  const decide = (ok: boolean) => {
    box.replaceChildren(h("p.hint", ok ? "Approved." : "Rejected."));
    done({ response: { confirmed: ok } });
  };
  box.append(
    h("div.label", "confirmation"),
    h("p", "The agent wants to call ", h("code", String(args.name ?? "?")), " with:"),
    h("pre", json(args.args ?? {})),
    h("div.row",
      h("button.approve.primary", { type: "button", onclick: () => decide(true) }, "Approve"),
      h("button.reject.danger", { type: "button", onclick: () => decide(false) }, "Reject")),
  );
  return box;
}

function argsTable(fc: FunctionCall, schema: Schema | undefined): HTMLElement {
  const args = (fc.args ?? {}) as JsonObject;
  const props = schema?.properties ?? {};
  const keys = Array.from(new Set([...Object.keys(props), ...Object.keys(args)]));
  return h("table.args", keys.map((k) =>
    h("tr",
      h("td", h("code", k), schema?.required?.includes(k) ? h("span.hint", " required") : null),
      h("td.hint", props[k]?.type ?? ""),
      h("td", h("code", JSON.stringify(args[k] ?? null))),
      h("td.hint", props[k]?.description ?? ""))));
}

function parseValue(s: string): JsonValue {
  try {
    return JSON.parse(s) as JsonValue;
  } catch {
    return s;
  }
}

function isObject(v: JsonValue): v is JsonObject {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function toolForm(fc: FunctionCall, tool: ToolInfo | undefined, done: (a: Answer) => void): HTMLElement {
  const schema = tool?.parameters as Schema | undefined;
  const rows = h("div.kv-rows");
  const addRow = (k = "", v = "") => {
    const row = h("div.row.kv",
      h("input.kv-key", { value: k, placeholder: "key", size: 14 }),
      h("input.kv-value", { value: v, placeholder: "value (JSON or text)", size: 30 }),
      h("button", { type: "button", onclick: () => row.remove() }, "−"));
    rows.append(row);
  };
  addRow("result");
  const raw = h("textarea.raw-json", { rows: 4, placeholder: '{"status": "shipped"}' }) as HTMLTextAreaElement;
  const useRaw = h("input.use-raw", { type: "checkbox" }) as HTMLInputElement;
  raw.hidden = true;
  useRaw.addEventListener("change", () => {
    raw.hidden = !useRaw.checked;
    rows.hidden = useRaw.checked;
  });
  const err = h("div.error-text");
  const box = h("div.answer.tool", { "data-call-id": fc.id });
  const submit = () => {
    let response: JsonObject = {};
    if (useRaw.checked) {
      try {
        const v = JSON.parse(raw.value || "{}") as JsonValue;
        if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("the result must be a JSON object");
        response = v;
      } catch (e) {
        err.textContent = String(e);
        return;
      }
    } else {
      const kvs = Array.from(rows.querySelectorAll(".kv"), (row) => [(row.querySelector(".kv-key") as HTMLInputElement).value.trim(), parseValue((row.querySelector(".kv-value") as HTMLInputElement).value)] as const);
      const [only] = kvs;
      // A JSON object pasted into the one field the form starts with is
      // the whole result, not a value under "result".
      if (kvs.length === 1 && only[0] === "result" && isObject(only[1])) response = only[1];
      else for (const [k, v] of kvs) if (k) response[k] = v;
    }
    box.replaceChildren(h("p.hint", "Result given: ", h("code", JSON.stringify(response))));
    done({ response });
  };
  append(box, [
    h("div.label", "client-executed tool ", h("code", fc.name || "(unknown call)"), h("span.hint", " ", fc.id)),
    tool?.description ? h("p.hint", tool.description) : null,
    argsTable(fc, schema),
    h("div.label", "its result"),
    rows,
    h("div.row", h("button", { type: "button", onclick: () => addRow() }, "+ field"), h("label", useRaw, " raw JSON")),
    raw,
    err,
    h("div.row", h("button.send-result.primary", { type: "button", onclick: submit }, "Send result")),
  ]);
  return box;
}
