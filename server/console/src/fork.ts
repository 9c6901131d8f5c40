// Going back in a session from its timeline: "Fork from here" and
// "Rewind to here" on an event, and "Edit and re-run" on a user message
// (a fork up to just before it, then the edited message as a run of the
// fork). eventTools is the one hook the timeline calls, per event card;
// the session is read from the route (apps/A/users/U/sessions/S).
import type { Event } from "../../../gen/ts/agentrunner/v1/event_pb.js";
import type { Part } from "../../../gen/ts/agentrunner/v1/content_pb.js";
import type { Session } from "../../../gen/ts/agentrunner/v1/session_pb.js";
import { runner, sessions, shortId } from "./api.js";
import { h, replace } from "./dom.js";
import { href, link, navigate, pathOf, segments, showError } from "./ui.js";

interface SessionKey {
  appName: string;
  userId: string;
  sessionId: string;
}

function currentSession(): SessionKey | undefined {
  const seg = segments();
  if (seg[0] !== "apps" || seg[2] !== "users" || seg[4] !== "sessions" || !seg[5]) return undefined;
  return { appName: seg[1], userId: seg[3], sessionId: seg[5] };
}

function sessionHref(k: SessionKey, id: string): string {
  return href(pathOf`apps/${k.appName}/users/${k.userId}/sessions/${id}`);
}

// fork copies the session's events 1..upTo into a new session and
// returns its id.
async function fork(k: SessionKey, upTo: bigint): Promise<string> {
  const resp = await sessions.forkSession({ ...k, upToSequence: upTo });
  return resp.session!.sessionId;
}

async function forkFromHere(k: SessionKey, ev: Event): Promise<void> {
  navigate(sessionHref(k, await fork(k, ev.sequence)));
}

async function rewindToHere(k: SessionKey, ev: Event): Promise<void> {
  await sessions.rewindSession({ ...k, beforeInvocationId: ev.invocationId });
  navigate(location.pathname + location.search, true); // the view again, with the rewind event
}

// editAndRerun forks before the message and runs the edited text in the
// fork, then shows the fork, where the run goes on.
async function editAndRerun(k: SessionKey, ev: Event, text: string): Promise<void> {
  const id = await fork(k, ev.sequence - 1n);
  const parts = [{ data: { case: "text", value: text } } as Part];
  await runner.startRun({ appName: k.appName, userId: k.userId, sessionId: id, newMessage: { role: "user", parts } });
  navigate(sessionHref(k, id));
}

function messageText(ev: Event): string {
  return (ev.content?.parts ?? []).map((p) => (p.data.case === "text" && !p.thought ? p.data.value : "")).filter(Boolean).join("\n");
}

function act(button: HTMLButtonElement, f: () => Promise<void>): void {
  button.disabled = true;
  f().catch((e) => showError(e)).finally(() => { button.disabled = false; });
}

function editor(k: SessionKey, ev: Event, slot: HTMLElement): void {
  const input = h("textarea.edit-message", { rows: 3 }) as HTMLTextAreaElement;
  input.value = messageText(ev);
  const run = h("button.run-edited", { type: "button" }, "Run in a fork") as HTMLButtonElement;
  run.addEventListener("click", () => act(run, () => editAndRerun(k, ev, input.value)));
  const cancel = h("button", { type: "button", onclick: () => replace(slot) }, "Cancel");
  replace(slot, h("div.edit-rerun-form", input, h("div.row", run, cancel)));
  input.focus();
}

// eventTools are the buttons of one event card, and what a rewind event
// undid.
export function eventTools(ev: Event): HTMLElement | null {
  const k = currentSession();
  if (!k) return null;
  const button = (cls: string, label: string, title: string, f: () => Promise<void>): HTMLElement => {
    const b = h(`button.${cls}`, { type: "button", title }, label) as HTMLButtonElement;
    b.addEventListener("click", () => act(b, f));
    return b;
  };
  const rewound = ev.actions?.rewindBeforeInvocationId;
  const slot = h("div.edit-slot");
  const text = ev.author === "user" && !rewound ? messageText(ev) : "";
  return h("div.event-tools",
    rewound ? h("div.rewind-note", "rewinds the session to before run ", h("code", { title: rewound }, shortId(rewound))) : null,
    button("fork-here", "Fork from here", `A new session with events #1–#${ev.sequence}, the state and artifacts as of this event`, () => forkFromHere(k, ev)),
    ev.invocationId && !rewound ? button("rewind-here", "Rewind to here", `Undo run ${ev.invocationId} and everything after it: state and artifacts go back to before its first event (nothing is deleted)`, () => rewindToHere(k, ev)) : null,
    text ? h("button.edit-rerun", { type: "button", title: "Fork before this message and run an edited one in the fork", onclick: () => editor(k, ev, slot) }, "Edit and re-run") : null,
    slot,
  );
}

// forkedFrom names a fork's source, a link to it at the event the fork
// was made at; null for a session that is no fork.
export function forkedFrom(s: Session): HTMLElement | null {
  const f = s.forkedFrom;
  if (!f) return null;
  const to = href(pathOf`apps/${s.appName}/users/${f.userId}/sessions/${f.sessionId}`) + `#ev-${f.sequence}`;
  return h("span#forked-from", " · forked from ", link(to, f.sessionId), ` at #${f.sequence}`);
}
