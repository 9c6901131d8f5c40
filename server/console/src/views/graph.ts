// The agent graph: an app's agent tree drawn as SVG (a tidy tree: each
// leaf its own column, a parent centred over its children), each agent
// with its kind, model and tools, tree edges solid and the transfers an
// LLM agent may make to its parent or peers dashed. Given a run's trace,
// the agents the run visited and the edges it took are highlighted, and
// the agents still running marked.
import { AgentKind, type AgentInfo } from "../../../../gen/ts/agentrunner/v1/agent_pb.js";
import { TraceSpanKind, type TraceSpan } from "../../../../gen/ts/agentrunner/v1/trace_pb.js";

const svgNS = "http://www.w3.org/2000/svg";
const W = 180, H = 62, GAP_X = 24, GAP_Y = 56, PAD = 12;

function el(tag: string, attrs: Record<string, string | number>, ...kids: (Node | string)[]): SVGElement {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k);
  return e;
}

// Path is what a run did in the tree: the agents it ran, those still
// running, and the edges it took (caller to callee, by name).
export interface Path {
  visited: Set<string>;
  running: Set<string>;
  edges: Set<string>; // "from>to"
}

// pathOfTrace reads a run's path from its trace: each agent's turn and the
// turn it ran inside, each transfer.
export function pathOfTrace(spans: TraceSpan[]): Path {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const p: Path = { visited: new Set(), running: new Set(), edges: new Set() };
  for (const s of spans) {
    if (s.kind === TraceSpanKind.AGENT) {
      p.visited.add(s.agentName);
      if (s.open) p.running.add(s.agentName);
      const parent = byId.get(s.parentSpanId);
      if (parent?.kind === TraceSpanKind.AGENT) p.edges.add(`${parent.agentName}>${s.agentName}`);
    }
    if (s.kind === TraceSpanKind.TOOL_CALL && s.transferToAgent) p.edges.add(`${s.agentName}>${s.transferToAgent}`);
  }
  return p;
}

interface Placed {
  a: AgentInfo;
  x: number; // centre
  y: number; // top
}

// layout places every agent: leaves in columns left to right, parents
// centred over their children, a row per depth.
function layout(root: AgentInfo): Map<string, Placed> {
  const out = new Map<string, Placed>();
  let col = 0;
  const place = (a: AgentInfo, depth: number): number => {
    let x: number;
    if (a.subAgents.length === 0) {
      x = PAD + col * (W + GAP_X) + W / 2;
      col++;
    } else {
      const xs = a.subAgents.map((s) => place(s, depth + 1));
      x = (xs[0] + xs[xs.length - 1]) / 2;
    }
    out.set(a.name, { a, x, y: PAD + depth * (H + GAP_Y) });
    return x;
  };
  place(root, 0);
  return out;
}

function kindName(k: AgentKind): string {
  return (AgentKind[k] ?? "").replace(/^AGENT_KIND_/, "").toLowerCase().replace("_a2a", "");
}

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

function node(p: Placed, path: Path | undefined): SVGElement {
  const a = p.a;
  const cls = `node${path?.visited.has(a.name) ? " visited" : ""}${path?.running.has(a.name) ? " running" : ""}`;
  const tools = a.tools.filter((t) => t !== "transfer_to_agent");
  const x = p.x - W / 2;
  return el("g", { class: cls, "data-agent": a.name, "data-kind": kindName(a.kind) },
    el("title", {}, [a.name, a.description, tools.length ? `tools: ${tools.join(", ")}` : ""].filter(Boolean).join("\n")),
    el("rect", { x, y: p.y, width: W, height: H, rx: 8 }),
    el("text", { x: x + 10, y: p.y + 18, "font-weight": 600 }, clip(a.name, 22)),
    el("text", { x: x + 10, y: p.y + 35, class: "sub" }, clip([kindName(a.kind), a.model].filter(Boolean).join(" · "), 28)),
    el("text", { x: x + 10, y: p.y + 51, class: "sub tools" }, clip(tools.length ? `tools: ${tools.join(", ")}` : "", 30)));
}

function edge(from: Placed, to: Placed, transfer: boolean, taken: boolean): SVGElement {
  const cls = `edge${transfer ? " transfer" : ""}${taken ? " taken" : ""}`;
  let d: string;
  if (transfer) {
    // A curve beside the boxes, from the side of one to the side of the other.
    const x1 = from.x + W / 2, y1 = from.y + H / 2, x2 = to.x + W / 2, y2 = to.y + H / 2;
    const bend = Math.max(x1, x2) + 30 + Math.abs(y2 - y1) / 6;
    d = `M${x1},${y1} C${bend},${y1} ${bend},${y2} ${x2},${y2}`;
  } else {
    const y1 = from.y + H, y2 = to.y, mid = (y1 + y2) / 2;
    d = `M${from.x},${y1} C${from.x},${mid} ${to.x},${mid} ${to.x},${y2}`;
  }
  return el("path", { d, class: cls, "data-from": from.a.name, "data-to": to.a.name, "marker-end": "url(#arrow)" });
}

// agentGraph draws root's tree, and path on it when given.
export function agentGraph(root: AgentInfo, path?: Path): SVGElement {
  const placed = layout(root);
  const all = [...placed.values()];
  const width = Math.max(...all.map((p) => p.x + W / 2)) + PAD + 60;
  const height = Math.max(...all.map((p) => p.y + H)) + PAD;
  const edges: SVGElement[] = [];
  for (const p of all) {
    for (const s of p.a.subAgents) edges.push(edge(p, placed.get(s.name)!, false, Boolean(path?.edges.has(`${p.a.name}>${s.name}`))));
    const kids = new Set(p.a.subAgents.map((s) => s.name));
    for (const t of p.a.transferTargets) {
      const to = placed.get(t);
      if (to && !kids.has(t)) edges.push(edge(p, to, true, Boolean(path?.edges.has(`${p.a.name}>${t}`))));
    }
  }
  return el("svg", { class: "agent-graph", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": `agent graph of ${root.name}` },
    el("defs", {}, el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" },
      el("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }))),
    ...edges, ...all.map((p) => node(p, path)));
}
