// The console's only way to the server: generated clients over the Connect
// protocol, at the page's base URL (so --http-prefix works), with the
// bearer token of this tab.
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { RunnerService } from "../../../gen/ts/agentrunner/service/v1/runner_service_pb.js";
import { SessionService } from "../../../gen/ts/agentrunner/service/v1/session_service_pb.js";
import { ArtifactService } from "../../../gen/ts/agentrunner/service/v1/artifact_service_pb.js";
import { UsageService } from "../../../gen/ts/agentrunner/service/v1/usage_service_pb.js";
import { ScheduleService } from "../../../gen/ts/agentrunner/service/v1/schedule_service_pb.js";
import { RunStatus } from "../../../gen/ts/agentrunner/v1/run_pb.js";
import type { Cost, UsageMetadata } from "../../../gen/ts/agentrunner/v1/event_pb.js";

const tokenKey = "agentrunner.token";

// The token lives in sessionStorage: it dies with the tab and is never
// written anywhere another tab or a later visit would read it.
export function token(): string {
  return sessionStorage.getItem(tokenKey) ?? "";
}
export function setToken(t: string): void {
  if (t) sessionStorage.setItem(tokenKey, t);
  else sessionStorage.removeItem(tokenKey);
}

const auth: Interceptor = (next) => async (req) => {
  const t = token();
  if (t) req.header.set("authorization", `Bearer ${t}`);
  return next(req);
};

// baseUrl is the page's base (<base href> carries --http-prefix) without
// its trailing slash: RPC paths are appended to it.
export const baseUrl = new URL(".", document.baseURI).href.replace(/\/$/, "");

const transport = createConnectTransport({ baseUrl, interceptors: [auth] });
const bare = createConnectTransport({ baseUrl });

export const runner = createClient(RunnerService, transport);
export const sessions = createClient(SessionService, transport);
// pages is SessionService in the binary protobuf encoding, for the pages
// of events a scrolling list loads: it decodes several times faster than
// JSON, which keeps the frames short.
export const pages = createClient(SessionService, createConnectTransport({ baseUrl, interceptors: [auth], useBinaryFormat: true }));
export const artifacts = createClient(ArtifactService, transport);
export const usage = createClient(UsageService, transport);
export const schedules = createClient(ScheduleService, transport);

// probeAuth asks the server without any token: an answer means the server
// checks no one.
export async function probeAuth(): Promise<"none" | "required"> {
  try {
    await createClient(RunnerService, bare).listApps({}, { timeoutMs: 10_000 });
    return "none";
  } catch (e) {
    if (ConnectError.from(e).code === Code.Unauthenticated) return "required";
    throw e;
  }
}

export function errCode(e: unknown): Code | undefined {
  return e instanceof ConnectError ? e.code : undefined;
}

export function errText(e: unknown): string {
  const ce = ConnectError.from(e);
  return `${Code[ce.code] ?? ce.code}: ${ce.rawMessage}`;
}

// Streams open at once, at most maxStreams: over plain HTTP/1.1 a browser
// allows 6 connections per origin, and unary calls need the rest.
export const maxStreams = 2;
let openStreams = 0;
export function tryOpenStream(): (() => void) | undefined {
  if (openStreams >= maxStreams) return undefined;
  openStreams++;
  let done = false;
  document.body.dataset.streams = String(openStreams);
  return () => {
    if (done) return;
    done = true;
    openStreams--;
    document.body.dataset.streams = String(openStreams);
  };
}

export function date(ts: Timestamp | undefined): Date | undefined {
  return ts ? timestampDate(ts) : undefined;
}

export const activeStatuses = [RunStatus.PENDING, RunStatus.RUNNING, RunStatus.INPUT_REQUIRED];

export function statusName(s: RunStatus): string {
  return (RunStatus[s] ?? String(s)).replace(/^RUN_STATUS_/, "");
}

export function isActive(s: RunStatus): boolean {
  return activeStatuses.includes(s);
}

export function fmtTokens(u: UsageMetadata | undefined): string {
  if (!u || !u.totalTokenCount) return "";
  return `${u.totalTokenCount} tok (${u.promptTokenCount} in, ${u.candidatesTokenCount} out)`;
}

// fmtCost prints micros as money; unpriced calls make it a lower bound.
export function fmtCost(c: Cost | undefined): string {
  if (!c) return "";
  const parts: string[] = [];
  if (c.currency) parts.push(`${(Number(c.micros) / 1e6).toFixed(6).replace(/0{1,4}$/, "")} ${c.currency}`);
  if (c.unpricedCalls > 0n) parts.push(`${c.unpricedCalls} unpriced call${c.unpricedCalls > 1n ? "s" : ""}`);
  return parts.join(" + ");
}

// user is the user id the console acts as, remembered across visits.
export function rememberedUser(): string {
  return localStorage.getItem("agentrunner.user") ?? "";
}
export function rememberUser(u: string): void {
  localStorage.setItem("agentrunner.user", u);
}

// shortId keeps the end of an id: run ids start with their time, so
// their beginnings look alike.
export function shortId(id: string): string {
  return id.length > 12 ? "…" + id.slice(-8) : id;
}
