import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, readFile, readlink } from "../core/named-fs.js";
import { osPath } from "../core/byte-names.js";
import { resolve } from "node:path";
import type { SignalOption } from "../backend/types.js";
import { SessionNotFoundError } from "../core/errors.js";
import type { CheckpointPayload, FileDiff, FileSnapshot, RewindPayload, StoredEvent } from "../core/events.js";
import { DIFF_LIMITS, diffBudget, diffFile, totalDiffs, type DiffLimits, type DiffTotals } from "../core/file-diff.js";
import type { SessionStore } from "../session/session-store.js";
import { readVerifiedBlob } from "../blobs/store-then-reference.js";
import { snapshotsIn } from "../blobs/references.js";
import { confine, realWorkspaceOf } from "../checkpoint/confine.js";
import { signalOf } from "../core/defined-fields.js";

export interface CheckpointChangesOptions extends SignalOption {
  /** Where "now" is read for paths no later snapshot covers. @default the session's workspace */
  workspace?: string;
  /** Each text change's unified diff as `patch`. @default false */
  patches?: boolean;
  /** @default DIFF_LIMITS */
  limits?: DiffLimits;
}

/** One path a checkpoint covers, and what the tool behind it did to that path. */
export interface CheckpointFileChange {
  path: string;
  /**
   * "created", "deleted", "modified" (content, mode, link target or kind), "unchanged", or "unknown"
   * when one side cannot be known (not captured, a blob missing or damaged, outside the workspace).
   */
  change: "created" | "deleted" | "modified" | "unchanged" | "unknown";
  /** What the path was before the tool, and after it: "file", "folder", "symlink" or "absent". */
  before: string;
  after: string;
  /** For a regular file on either side: lines (or bytes) the tool inserted and deleted. */
  diff?: FileDiff;
  patch?: string;
  /** Why the change is "unknown". */
  reason?: string;
}

export interface CheckpointChanges {
  /** The checkpoint event's sequence: `rewind --to <sequence - 1>` undoes its tool and all after it. */
  sequence: number;
  tool: string;
  callId?: string;
  files: CheckpointFileChange[];
  totals: DiffTotals;
}

/** What a path held at some point: a snapshot record, or the workspace as it is now. */
type State =
  | { kind: "absent" | "unknown"; reason?: string }
  | { kind: "file"; bytes?: Buffer; size: number; hash?: string; mode: number }
  | { kind: "folder"; mode: number }
  | { kind: "symlink"; target: string };

/**
 * What each checkpoint's tool changed (docs/ARCHITECTURE.md, "Session view"): per path, its
 * before-snapshot against what came next — the next snapshot of that path further down the tape,
 * or, when none follows, the workspace now. The same rule as the rewind's plan, read forwards: a
 * "files" rewind's undo snapshot counts as a snapshot; other rewind markers carry none that belongs
 * to the log as it stands. Diffs are bounded as in rewind reports (`DIFF_LIMITS`, one budget for
 * the whole session). Reads only blobs and paths inside the workspace.
 */
export async function checkpointChanges(
  store: SessionStore<any>,
  id: string,
  options: CheckpointChangesOptions = {},
): Promise<CheckpointChanges[]> {
  const info = await store.get(id);
  if (!info) throw new SessionNotFoundError(id);
  const signal = signalOf(options);
  const limits = options.limits ?? DIFF_LIMITS;

  // Only the events that carry snapshots are kept: a long tape of messages costs nothing here.
  const carriers: { event: StoredEvent; files: readonly FileSnapshot[] }[] = [];
  for await (const event of store.read(id, signal)) {
    if (event.type === "session_rewind" && (event.payload as RewindPayload).mode !== "files") continue;
    const files = snapshotsIn(event);
    if (files.length > 0 || event.type === "session_checkpoint") carriers.push({ event, files });
  }

  const workspace = options.workspace ?? info.workspace;
  const now = workspace === undefined ? undefined : await workspaceReader(workspace, limits);
  const budget = diffBudget(limits);
  const blobOf = (hash: string, bytes: number) => readVerifiedBlob(store.backend, id, hash, { ...signal, bytes });

  // Walk backwards, so "the next snapshot of this path" is the last one seen.
  const next = new Map<string, FileSnapshot>();
  const result: CheckpointChanges[] = [];
  for (let i = carriers.length - 1; i >= 0; i--) {
    const { event, files } = carriers[i]!;
    if (event.type === "session_checkpoint") {
      const payload = event.payload as CheckpointPayload;
      const changes: CheckpointFileChange[] = [];
      for (const file of files) {
        const later = next.get(file.path);
        const before = await fromSnapshot(file, blobOf);
        const after = later
          ? await fromSnapshot(later, blobOf)
          : now
            ? await now(file.path)
            : { kind: "unknown" as const, reason: "no workspace to compare with" };
        changes.push(describe(file.path, before, after, { limits, budget, patches: options.patches ?? false }));
      }
      changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      const entry: CheckpointChanges = {
        sequence: event.sequence,
        tool: payload.tool,
        files: changes,
        totals: totalDiffs(changes.map((c) => c.diff)),
      };
      if (payload.callId !== undefined) entry.callId = payload.callId;
      result.push(entry);
    }
    for (const file of files) next.set(file.path, file);
  }
  return result.reverse();
}

async function fromSnapshot(
  file: FileSnapshot,
  blobOf: (hash: string, bytes: number) => Promise<Buffer>,
): Promise<State> {
  switch (file.kind) {
    case "absent":
      return { kind: "absent" };
    case "directory":
      return { kind: "folder", mode: file.mode };
    case "symlink":
      return { kind: "symlink", target: file.target };
    case "skipped":
      return { kind: "unknown", reason: `not captured (${file.reason})` };
    case "blob":
      try {
        return {
          kind: "file",
          bytes: await blobOf(file.blob, file.bytes),
          size: file.bytes,
          hash: file.blob,
          mode: file.mode,
        };
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code === "BLOB_NOT_FOUND" || code === "BLOB_CORRUPT") return { kind: "unknown", reason: code };
        throw error;
      }
  }
}

/** Reads a workspace path as it is now: confined, never following its last component, large files measured. */
async function workspaceReader(workspace: string, limits: DiffLimits): Promise<(path: string) => Promise<State>> {
  let real: string;
  try {
    real = await realWorkspaceOf(workspace);
  } catch {
    return async () => ({ kind: "unknown", reason: "the workspace is gone" });
  }
  const given = resolve(workspace);
  return async (path) => {
    const place = await confine(real, path, given);
    if (!place.inside) return { kind: "unknown", reason: "outside_workspace" };
    const absolute = place.path === "." ? real : `${real}/${place.path}`;
    try {
      const info = await lstat(absolute);
      if (info.isSymbolicLink()) return { kind: "symlink", target: await readlink(absolute) };
      if (info.isDirectory()) return { kind: "folder", mode: info.mode & 0o7777 };
      if (!info.isFile()) return { kind: "unknown", reason: "not_a_regular_file" };
      const mode = info.mode & 0o7777;
      // Too large to diff: hashed as a stream, so "unchanged" is still told apart without holding it.
      if (info.size > limits.maxBytes) return { kind: "file", size: info.size, hash: await sha256Of(absolute), mode };
      const bytes = await readFile(absolute);
      return { kind: "file", bytes, size: bytes.length, hash: sha256(bytes), mode };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return { kind: "absent" };
      return { kind: "unknown", reason: code ?? String(error) };
    }
  };
}

function describe(
  path: string,
  before: State,
  after: State,
  options: { limits: DiffLimits; budget: ReturnType<typeof diffBudget>; patches: boolean },
): CheckpointFileChange {
  const change: CheckpointFileChange = { path, change: "unchanged", before: before.kind, after: after.kind };
  if (before.kind === "unknown" || after.kind === "unknown") {
    change.change = "unknown";
    const reason = (before.kind === "unknown" ? before.reason : undefined) ?? (after as { reason?: string }).reason;
    if (reason !== undefined) change.reason = reason;
    return change;
  }
  if (before.kind === "absent" && after.kind !== "absent") change.change = "created";
  else if (before.kind !== "absent" && after.kind === "absent") change.change = "deleted";
  else if (!same(before, after)) change.change = "modified";
  if (before.kind === "file" || after.kind === "file") {
    const sides = {
      before: before.kind === "file" ? before : undefined,
      after: after.kind === "file" ? after : undefined,
    };
    const result = diffFile(path, sides.before?.bytes, sides.after?.bytes, {
      limits: options.limits,
      budget: options.budget,
      patch: options.patches,
      sizes: {
        ...(sides.before && !sides.before.bytes && { before: sides.before.size }),
        ...(sides.after && !sides.after.bytes && { after: sides.after.size }),
      },
      identical: sides.before?.hash !== undefined && sides.before.hash === sides.after?.hash,
    });
    change.diff = result.diff;
    if (result.patch !== undefined) change.patch = result.patch;
  }
  return change;
}

function same(a: State, b: State): boolean {
  if (a.kind === "file" && b.kind === "file")
    return a.mode === b.mode && a.hash !== undefined && a.hash === b.hash && a.size === b.size;
  if (a.kind === "folder" && b.kind === "folder") return a.mode === b.mode;
  if (a.kind === "symlink" && b.kind === "symlink") return a.target === b.target;
  return a.kind === b.kind;
}

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(osPath(path))) hash.update(chunk as Buffer);
  return hash.digest("hex");
}
