import {
  reappendedCount,
  type CheckpointPayload,
  type CompactionPayload,
  type ErrorPayload,
  type ForkPayload,
  type MessagePayload,
  type PermissionDecisionPayload,
  type FileStatesPayload,
  type RewindPayload,
  type StoredEvent,
  type ToolCallPayload,
  type ToolResultPayload,
  type UsagePayload,
} from "../index.js";
import { oneLine, plural } from "./output.js";

/**
 * What an event says, in one short line, for `agent-tape show`. Payloads come from disk and may
 * predate or postdate this code (unknown types are kept), so every field is read defensively.
 */
export function summarizeEvent(event: StoredEvent, max = 100): string {
  try {
    return oneLine(describe(event), max);
  } catch {
    return oneLine(compactJson(event.payload), max);
  }
}

function describe(event: StoredEvent): string {
  const p = (event.payload ?? {}) as Record<string, unknown>;
  switch (event.type) {
    case "message": {
      const m = p as MessagePayload;
      return `${m.role}: ${contentText(m.content)}`;
    }
    case "tool_call": {
      const c = p as ToolCallPayload;
      return `${c.name} [${c.callId}] ${compactJson(c.input)}`;
    }
    case "tool_result": {
      const r = p as ToolResultPayload;
      const output = typeof r.output === "string" ? r.output : compactJson(r.output);
      return `[${r.callId}]${r.isError ? " error:" : ""} ${output}`;
    }
    case "permission_decision": {
      const d = p as PermissionDecisionPayload;
      return `${d.decision} ${d.tool}${d.callId ? ` [${d.callId}]` : ""}${d.reason ? `: ${d.reason}` : ""}`;
    }
    case "usage": {
      const u = p as UsagePayload;
      const parts = [
        u.model,
        u.inputTokens !== undefined ? `in ${u.inputTokens}` : undefined,
        u.outputTokens !== undefined ? `out ${u.outputTokens}` : undefined,
      ];
      if (u.costUsd !== undefined) parts.push(`$${u.costUsd.toFixed(4)}`);
      return parts.filter((x) => x !== undefined).join(", ");
    }
    case "error": {
      const e = p as ErrorPayload;
      return `${e.code ? `${e.code}: ` : ""}${e.message}`;
    }
    case "compaction": {
      const c = p as CompactionPayload;
      return `through #${c.throughSequence}: ${c.summary}`;
    }
    case "session_checkpoint": {
      const c = p as CheckpointPayload;
      const files = c.files ?? [];
      const names = files.map((f) =>
        f.kind === "absent" ? `${f.path} (new)` : f.kind === "skipped" ? `${f.path} (skipped: ${f.reason})` : f.path,
      );
      return `before ${c.tool}: ${plural(files.length, "file")}${names.length ? ` — ${names.join(", ")}` : ""}`;
    }
    case "session_file_states": {
      const a = p as FileStatesPayload;
      const names = (a.files ?? []).map((f) => (f.kind === "file" ? f.path : `${f.path} (${f.kind})`));
      const listed = names.length ? ` — ${names.join(", ")}` : "";
      return `after ${a.tool ?? "a tool"}: ${plural(names.length, "file")}${listed}`;
    }
    case "session_rewind": {
      const r = p as RewindPayload;
      const files =
        `${r.filesRestored} restored, ${r.filesDeleted} deleted` +
        `${r.skipped?.length ? `, ${r.skipped.length} skipped` : ""}`;
      if (r.undoOf !== undefined)
        return `undo of rewind #${r.undoOf}: ${files}, ${plural(reappendedCount(r), "event")} put back`;
      return `rewind to #${r.targetSequence} (${r.mode}): ${files}, ${plural(r.eventsRemoved, "event")} removed`;
    }
    case "session_fork": {
      const f = p as ForkPayload;
      return `forked from ${f.parentId} at #${f.atSequence}`;
    }
    default:
      return compactJson(event.payload);
  }
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return compactJson(content);
  // Provider-style parts: show the text ones, count the rest.
  const texts = content.flatMap((part) =>
    part && typeof part === "object" && typeof (part as { text?: unknown }).text === "string"
      ? [(part as { text: string }).text]
      : [],
  );
  const others = content.length - texts.length;
  return [texts.join(" "), others > 0 ? `[+${plural(others, "part")}]` : ""].filter(Boolean).join(" ");
}

function compactJson(value: unknown): string {
  if (value === undefined) return "";
  return JSON.stringify(value) ?? String(value);
}
