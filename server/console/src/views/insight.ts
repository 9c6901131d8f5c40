// What the run view shows of how a run went: its trace and its app's agent
// graph with the run's path, kept live from the run's stream: the trace
// is fetched again as events are stored, and an agent streaming an answer
// is marked running in the graph before any event of it is stored (and
// so before the trace has its turn).
import type { Run } from "../../../../gen/ts/agentrunner/v1/run_pb.js";
import type { TraceSpan } from "../../../../gen/ts/agentrunner/v1/trace_pb.js";
import type { AgentInfo } from "../../../../gen/ts/agentrunner/v1/agent_pb.js";
import { isActive, runner } from "../api.js";
import { h, replace } from "../dom.js";
import { section, showError } from "../ui.js";
import { TraceView } from "./trace.js";
import { agentGraph, pathOfTrace } from "./graph.js";

export class RunInsight {
  readonly elements: HTMLElement[];
  private readonly trace: TraceView;
  private readonly graph = h("div#agent-graph.graph-box");
  private readonly streaming = new Set<string>();
  private spans: TraceSpan[] = [];

  private constructor(run: Run, private readonly tree: AgentInfo | undefined, private readonly signal: AbortSignal) {
    this.trace = new TraceView(run.runId, signal, (spans) => {
      this.spans = spans;
      this.drawGraph();
    });
    this.elements = [this.trace.el];
    if (tree) this.elements.push(section("Agent graph", [], h("p.hint", "The app's agents; the ones this run visited and the hand-overs it took are highlighted, those still running dashed."), this.graph));
  }

  // open fetches the run's app's agent tree and draws the first trace.
  static async open(run: Run, signal: AbortSignal): Promise<RunInsight> {
    const tree = (await runner.listApps({}, { signal })).apps.find((a) => a.name === run.appName)?.rootAgent;
    const v = new RunInsight(run, tree, signal);
    v.refresh();
    return v;
  }

  // refresh fetches the trace again (calls close together coalesce).
  refresh(): void {
    this.trace.refresh().catch((e) => {
      if (!this.signal.aborted) showError(e);
    });
  }

  // poll fetches the trace again, its error to the caller: for a view
  // without the run's stream, polling while the run is active.
  poll(): Promise<void> {
    return this.trace.refresh();
  }

  // streamed notes a partial event: its author is answering now.
  streamed(author: string): void {
    if (this.streaming.has(author)) return;
    this.streaming.add(author);
    this.drawGraph();
  }

  // stored notes a stored event of the run.
  stored(author: string): void {
    this.streaming.delete(author);
    this.refresh();
  }

  // changed notes the run's record as the stream sends it.
  changed(r: Run): void {
    if (!isActive(r.status)) this.streaming.clear();
    this.refresh();
  }

  private drawGraph(): void {
    if (!this.tree) return;
    const path = pathOfTrace(this.spans);
    for (const a of this.streaming) {
      path.visited.add(a);
      path.running.add(a);
    }
    replace(this.graph, agentGraph(this.tree, path));
  }
}
