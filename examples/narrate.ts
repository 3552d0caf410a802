// Terminal output for the demo: one line per tape event, workspace listings, the session folder.
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import {
  reappendedCount,
  type CheckpointPayload,
  type MessagePayload,
  type FileStatesPayload,
  type RewindPayload,
  type StoredEvent,
  type ToolCallPayload,
  type ToolResultPayload,
} from "../src/index.js";

const useColor = process.stdout.isTTY === true && !process.env.NO_COLOR;
const codes = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  magenta: [35, 39],
  cyan: [36, 39],
} as const;
export function paint(style: keyof typeof codes, text: string): string {
  const [on, off] = codes[style];
  return useColor ? `\x1b[${on}m${text}\x1b[${off}m` : text;
}

export function heading(title: string): void {
  console.log(`\n${paint("bold", `── ${title} `.padEnd(78, "─"))}`);
}

export function note(text: string): void {
  console.log(paint("dim", `  ${text}`));
}

export function shorten(text: string, max = 64): string {
  const flat = text.replace(/\n/g, "↵");
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

const typeColor: Record<string, keyof typeof codes> = {
  message: "cyan",
  tool_call: "yellow",
  tool_result: "green",
  session_checkpoint: "magenta",
  session_rewind: "blue",
  session_file_states: "magenta",
};

/** `  #12  tool_call           edit_file src/greet.ts` */
export function eventLine(event: StoredEvent): string {
  const sequence = paint("dim", `#${event.sequence}`.padStart(5));
  const type = paint(typeColor[event.type] ?? "bold", event.type.padEnd(20));
  return `${sequence}  ${type}${summarize(event)}`;
}

function summarize(event: StoredEvent): string {
  switch (event.type) {
    case "message": {
      const p = event.payload as MessagePayload;
      return `${p.role}: ${shorten(typeof p.content === "string" ? p.content : JSON.stringify(p.content), 56)}`;
    }
    case "tool_call": {
      const p = event.payload as ToolCallPayload;
      const input = p.input as { path?: unknown } | undefined;
      const shown = typeof input?.path === "string" ? input.path : shorten(JSON.stringify(p.input), 40);
      return `${p.callId}  ${p.name} ${shown}`;
    }
    case "tool_result": {
      const p = event.payload as ToolResultPayload;
      const text = shorten(typeof p.output === "string" ? p.output : JSON.stringify(p.output), 44);
      return `${p.callId}  ${p.isError ? paint("red", `error: ${text}`) : `ok: ${text}`}`;
    }
    case "session_checkpoint": {
      const p = event.payload as CheckpointPayload;
      const files = p.files.map((f) =>
        f.kind === "blob"
          ? `${f.path} (${f.bytes} B, blob ${f.blob.slice(0, 8)})`
          : `${f.path} (${f.kind === "skipped" ? `skipped: ${f.reason}` : f.kind})`,
      );
      return `before ${p.tool}: ${files.join(", ")}`;
    }
    case "session_file_states": {
      const p = event.payload as FileStatesPayload;
      const files = p.files.map((f) =>
        f.kind === "file" ? `${f.path} (sha256 ${f.sha256.slice(0, 8)})` : `${f.path} (${f.kind})`,
      );
      return `after ${p.tool ?? "a tool"}: ${files.join(", ")}`;
    }
    case "session_rewind": {
      const p = event.payload as RewindPayload;
      const files = `${p.filesRestored} restored, ${p.filesDeleted} deleted`;
      return p.undoOf !== undefined
        ? `undo of rewind #${p.undoOf}: ${files}, ${reappendedCount(p)} events re-appended`
        : `rewound to #${p.targetSequence}: ${files}, ${p.eventsRemoved} events removed`;
    }
    default:
      return shorten(JSON.stringify(event.payload), 56);
  }
}

/** Every file and folder under `dir`, relative, sorted: folders as `name/`, files with their text. */
export async function readWorkspace(dir: string): Promise<Map<string, string | null>> {
  const entries = new Map<string, string | null>();
  const walk = async (rel: string) => {
    for (const entry of (await readdir(join(dir, rel), { withFileTypes: true })).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        entries.set(`${path}/`, null);
        await walk(path);
      } else entries.set(path, await readFile(join(dir, path), "utf8"));
    }
  };
  await walk("");
  return entries;
}

export function printWorkspace(label: string, files: Map<string, string | null>): void {
  console.log(`  ${paint("bold", label)}`);
  const width = Math.max(...[...files.keys()].map((p) => p.length)) + 2;
  for (const [path, text] of files)
    console.log(`    ${path.padEnd(width)}${text === null ? "" : paint("dim", shorten(text, 74 - width))}`);
}

export function sameWorkspace(a: Map<string, string | null>, b: Map<string, string | null>): boolean {
  return a.size === b.size && [...a].every(([path, text]) => b.has(path) && b.get(path) === text);
}

/** The session folder as a tree, with sizes; the log also with its line count. */
export async function printTree(dir: string, indent = "  "): Promise<void> {
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      console.log(`${indent}${entry.name}/`);
      await printTree(path, `${indent}  `);
      continue;
    }
    const { size } = await stat(path);
    const lines = entry.name.endsWith(".jsonl")
      ? `, ${(await readFile(path, "utf8")).split("\n").filter(Boolean).length} lines`
      : "";
    const name = entry.name.length > 24 ? `${entry.name.slice(0, 16)}…` : entry.name;
    console.log(`${indent}${name.padEnd(Math.max(2, 26 - indent.length))}${paint("dim", `${size} B${lines}`)}`);
  }
}
