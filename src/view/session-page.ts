import { createHash } from "node:crypto";
import type { FileDiff, RewindPayload, StoredEvent } from "../core/events.js";
import type { SessionInfo } from "../session/session-store.js";
import type { CheckpointChanges } from "./checkpoint-changes.js";
import { PAGE_STYLE } from "./page-style.js";
import { reappendedCount } from "../core/reappended.js";

export interface SessionPageInput {
  session: SessionInfo;
  /** The tape, in sequence order. */
  events: Iterable<StoredEvent>;
  /** From `checkpointChanges` (with `patches: true` for the diffs to show). */
  checkpoints: readonly CheckpointChanges[];
  /** Printed in the footer. @default now */
  generatedAt?: string;
}

/** The most characters of one payload or diff shown; the page says what it left out. */
const MAX_TEXT = 20_000;

/**
 * The page's Content Security Policy: nothing may be fetched, framed or submitted, no `<base>` may move its
 * links, and the only style that applies is the page's own `<style>` element, named by its hash (no
 * `'unsafe-inline'`: a `<style>` or `style=` that slipped through the escaping is ignored). There is no
 * script-src at all: `default-src 'none'` forbids every script. A meta refresh is not something a policy
 * can forbid; the escaping is what keeps one off the page (docs/ARCHITECTURE.md, "Session view").
 */
export const SESSION_PAGE_POLICY =
  "default-src 'none'; " +
  `style-src 'sha256-${createHash("sha256").update(PAGE_STYLE).digest("base64")}'; ` +
  "form-action 'none'; base-uri 'none'";

/**
 * The session as one self-contained HTML page (docs/ARCHITECTURE.md, "Session view"): the timeline
 * of the tape, each event with its sequence (what `rewind --to` takes), each checkpoint expandable
 * to its files and their diffs. No script, no network, no external asset: the page's own Content
 * Security Policy forbids them. Everything that came from the tape is escaped, names and content alike.
 */
export function renderSessionPage(input: SessionPageInput): string {
  const { session } = input;
  const byCheckpoint = new Map(input.checkpoints.map((c) => [c.sequence, c]));
  const items: string[] = [];
  let count = 0;
  for (const event of input.events) {
    count++;
    items.push(renderEvent(session.id, event, byCheckpoint.get(event.sequence)));
  }
  const title = session.title ? `${session.title} · ${session.id}` : session.id;
  const facts: [string, string][] = [
    ["session", session.id],
    ["workspace", session.workspace ?? "(none recorded)"],
    ["created", session.createdAt],
    ["last event", `#${String(session.lastSequence)} at ${String(session.updatedAt)}`],
  ];
  if (session.parent)
    facts.push(["forked from", `${String(session.parent.id)} at #${String(session.parent.atSequence)}`]);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${SESSION_PAGE_POLICY}">
<meta name="generator" content="agent-tape">
<title>${esc(title)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<header>
<h1>${esc(session.title ?? "Session")}</h1>
<dl class="facts">${facts.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join("")}</dl>
<p class="hint">Each event shows its sequence: <code>agent-tape rewind ${esc(session.id)} --to N</code> winds the
session back to just after event N. Open a checkpoint to see what its tool changed.</p>
</header>
<main>
<ol class="timeline" data-events="${count}">
${items.join("\n")}
</ol>
${count === 0 ? '<p class="empty">This session has no events yet.</p>' : ""}
</main>
<footer>Written by agent-tape at ${esc(input.generatedAt ?? new Date().toISOString())}.</footer>
</body>
</html>
`;
}

function renderEvent(sessionId: string, event: StoredEvent, checkpoint: CheckpointChanges | undefined): string {
  const kind = cssName(event.type);
  const seq = num(event.sequence);
  const head =
    `<div class="head"><a class="seq" href="#seq-${seq}">#${seq}</a>` +
    `<span class="type">${esc(event.type)}</span><time>${esc(event.createdAt)}</time></div>`;
  return (
    `<li id="seq-${seq}" class="event ${kind}" data-sequence="${seq}" ` +
    `data-type="${esc(event.type)}">${head}<div class="body">${renderBody(sessionId, event, checkpoint)}</div></li>`
  );
}

function renderBody(sessionId: string, event: StoredEvent, checkpoint: CheckpointChanges | undefined): string {
  const p = (event.payload ?? {}) as Record<string, unknown>;
  switch (event.type) {
    case "message":
      return `<p class="role role-${cssName(String(p.role))}">${esc(String(p.role))}</p>${text(p.content)}`;
    case "tool_call":
      return `<p><strong>${esc(String(p.name))}</strong> ${callId(p.callId)}</p>${text(p.input)}`;
    case "tool_result": {
      const failed = p.isError === true ? '<span class="bad">error</span> ' : "";
      return `<p>${failed}result ${callId(p.callId)}</p>${text(p.output)}`;
    }
    case "session_checkpoint":
      return checkpoint ? renderCheckpoint(sessionId, event.sequence, checkpoint) : text(p);
    case "session_rewind":
      return renderRewind(p);
    case "session_fork":
      return `<p>Forked from <code>${esc(p.parentId)}</code> at #${num(p.atSequence)}.</p>`;
    default:
      return text(p);
  }
}

function renderCheckpoint(sessionId: string, sequence: number, c: CheckpointChanges): string {
  const rows = c.files
    .map(
      (f) =>
        `<tr class="change-${f.change}"><td>${esc(f.change)}</td><td class="path">${esc(f.path)}</td>` +
        `<td class="num">${figure(f.diff)}</td><td>${f.reason ? esc(f.reason) : ""}</td></tr>`,
    )
    .join("");
  const patches = c.files
    .map((f) =>
      f.patch !== undefined
        ? `<pre class="diff" data-path="${esc(f.path)}">${diffLines(f.patch)}</pre>`
        : f.diff?.unit === "bytes"
          ? `<p class="note">${esc(f.path)}: no line diff (${esc(f.diff.reason ?? "bytes")}).</p>`
          : "",
    )
    .join("");
  const totals = [c.totals.lines, c.totals.bytes].some((t) => t.insertions + t.deletions > 0)
    ? ` <span class="num">${figure({ unit: "lines", ...c.totals.lines })}${
        c.totals.bytes.insertions + c.totals.bytes.deletions > 0
          ? `, ${figure({ unit: "bytes", ...c.totals.bytes })}`
          : ""
      }</span>`
    : "";
  return (
    `<details class="checkpoint"><summary>before <strong>${esc(c.tool)}</strong> ${callId(c.callId)}: ` +
    `${c.files.length} ${c.files.length === 1 ? "path" : "paths"}${totals}</summary>` +
    `<table class="files"><tbody>${rows}</tbody></table>${patches}` +
    `<p class="hint">To undo this tool and all after it: <code>agent-tape rewind ${esc(sessionId)} ` +
    `--to ${sequence - 1}</code></p></details>`
  );
}

/**
 * A rewind or undo marker. Read as a record of unknowns, not as its schema says: a hand-written line is not
 * checked on read, so every field may be anything (a string of markup where a count belongs).
 */
function renderRewind(p: Record<string, unknown>): string {
  const undo = p.undoOf !== undefined;
  const what = undo
    ? `Undo of rewind #${num(p.undoOf)}`
    : `Rewind to #${num(p.targetSequence)} (mode ${esc(p.mode)}), ${num(p.eventsRemoved)} events removed`;
  const rows = listOf(p.changes)
    .map((change) => {
      const c = recordOf(change);
      return (
        `<tr class="action-${cssName(String(c.action))}"><td>${esc(c.action)}</td>` +
        `<td class="path">${esc(c.path)}</td>` +
        `<td class="num">${figure(c.diff)}</td><td>${c.reason ? esc(c.reason) : ""}</td></tr>`
      );
    })
    .join("");
  const skipped = listOf(p.skipped).length;
  return (
    `<p>${what}: ${num(p.filesRestored)} restored, ${num(p.filesDeleted)} deleted` +
    `${skipped ? `, ${skipped} skipped` : ""}` +
    `${undo ? `, ${num(reappendedCount(p as RewindPayload))} events put back` : ""}.</p>` +
    (rows ? `<table class="files"><tbody>${rows}</tbody></table>` : "")
  );
}

function figure(value: FileDiff | unknown): string {
  if (typeof value !== "object" || value === null) return "";
  const diff = value as Record<string, unknown>;
  const unit = diff.unit === "bytes" ? " B" : "";
  return (
    `<span class="ins">+${num(diff.insertions)}${unit}</span> ` +
    `<span class="del">\u2212${num(diff.deletions)}${unit}</span>`
  );
}

function diffLines(patch: string): string {
  const lines = clip(patch).split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines
    .map((line) => {
      const cls = /^(---|\+\+\+) /.test(line)
        ? "file"
        : line.startsWith("@@")
          ? "hunk"
          : line.startsWith("+")
            ? "ins"
            : line.startsWith("-")
              ? "del"
              : "ctx";
      return `<span class="${cls}">${esc(line)}</span>`;
    })
    .join(""); // each line a block (its colour spans the width): a newline between them would double it
}

function text(value: unknown): string {
  if (value === undefined) return "";
  const shown = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return `<pre class="text">${esc(clip(shown ?? String(value)))}</pre>`;
}

function callId(id: unknown): string {
  return typeof id === "string" ? `<code class="call">[${esc(id)}]</code>` : "";
}

function clip(text: string): string {
  if (text.length <= MAX_TEXT) return text;
  return `${text.slice(0, MAX_TEXT)}\n… ${text.length - MAX_TEXT} more characters not shown`;
}

/** A string from the tape made safe as a class name: anything else becomes "-". */
function cssName(text: string): string {
  return `t-${text.replace(/[^A-Za-z0-9_-]/g, "-")}`;
}

/**
 * HTML-escapes text for element content and double- or single-quoted attributes alike. Takes anything: a
 * value read from the tape is a string only if its schema was checked, and a hand-written line's was not.
 */
export function esc(text: unknown): string {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A count or sequence from the tape: its digits when it is a safe integer, else what it holds, escaped. */
function num(value: unknown): string {
  return Number.isSafeInteger(value) ? String(value) : esc(value);
}

function listOf(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

function recordOf(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
}
