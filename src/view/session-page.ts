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
    ["last event", `#${session.lastSequence} at ${session.updatedAt}`],
  ];
  if (session.parent) facts.push(["forked from", `${session.parent.id} at #${session.parent.atSequence}`]);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
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
  const head =
    `<div class="head"><a class="seq" href="#seq-${event.sequence}">#${event.sequence}</a>` +
    `<span class="type">${esc(event.type)}</span><time>${esc(event.createdAt)}</time></div>`;
  return (
    `<li id="seq-${event.sequence}" class="event ${kind}" data-sequence="${event.sequence}" ` +
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
      return renderRewind(p as RewindPayload);
    case "session_fork":
      return `<p>Forked from <code>${esc(String(p.parentId))}</code> at #${esc(String(p.atSequence))}.</p>`;
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

function renderRewind(p: RewindPayload): string {
  const undo = p.undoOf !== undefined;
  const what = undo
    ? `Undo of rewind #${p.undoOf}`
    : `Rewind to #${p.targetSequence} (mode ${esc(p.mode)}), ${p.eventsRemoved} events removed`;
  const rows = (p.changes ?? [])
    .map(
      (c) =>
        `<tr class="action-${cssName(c.action)}"><td>${esc(c.action)}</td><td class="path">${esc(c.path)}</td>` +
        `<td class="num">${figure(c.diff)}</td><td>${c.reason ? esc(c.reason) : ""}</td></tr>`,
    )
    .join("");
  return (
    `<p>${what}: ${p.filesRestored} restored, ${p.filesDeleted} deleted` +
    `${p.skipped?.length ? `, ${p.skipped.length} skipped` : ""}` +
    `${undo ? `, ${reappendedCount(p)} events put back` : ""}.</p>` +
    (rows ? `<table class="files"><tbody>${rows}</tbody></table>` : "")
  );
}

function figure(diff: FileDiff | undefined): string {
  if (!diff) return "";
  const unit = diff.unit === "bytes" ? " B" : "";
  return `<span class="ins">+${diff.insertions}${unit}</span> <span class="del">\u2212${diff.deletions}${unit}</span>`;
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

/** HTML-escapes text for element content and double- or single-quoted attributes alike. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
