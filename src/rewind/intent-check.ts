import { z } from "zod";
import type { SignalOption, StorageBackend } from "../backend/types.js";
import { StoreTamperedError, isAgentTapeError } from "../core/errors.js";
import { FileSnapshot, RewindPayload, type StoredEvent } from "../core/events.js";
import { archiveName, isArchiveName } from "../blobs/archives.js";
import { closestSnapshotPerPath, type WantedState } from "./plan.js";
import type { RewindIntent } from "./rewind-intent.js";

const ArchiveName = z.string().refine(isArchiveName, "not a rewind archive's name");
const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);
const IntentShape = z
  .object({
    kind: z.enum(["rewind", "undo"]),
    markerSequence: z.number().int().positive(),
    workspace: z.string().optional(),
    files: z.array(FileSnapshot),
    truncateTo: z.number().int().nonnegative(),
    append: z.array(z.looseObject({ sessionId: z.string(), sequence: z.number().int(), type: z.string() })).min(1),
    dropArchives: z.array(ArchiveName),
    archive: z
      .object({
        name: ArchiveName,
        events: z.array(z.unknown()).optional(),
        copyAfter: z.number().int().nonnegative().optional(),
        blobs: z.array(z.string().regex(/^[0-9a-f]{64}$/)).optional(),
      })
      .refine((a) => (a.events === undefined) !== (a.copyAfter === undefined), "events or copyAfter, not both")
      .optional(),
    reappend: z
      .object({
        archive: ArchiveName,
        log: z.object({ bytes: z.number().int().nonnegative(), sha256: Sha256, events: z.number().int().positive() }),
        first: z.number().int().positive(),
      })
      .optional(),
    prune: z.boolean(),
    pruneCandidates: z.array(z.string().regex(/^[0-9a-f]{64}$/)).optional(),
    before: z.array(FileSnapshot).optional(),
    failed: z.object({ reason: z.string() }).optional(),
    onLateChange: z.enum(["refuse", "skip", "overwrite"]).optional(),
    undoBlobs: z.array(z.object({ hash: z.string().regex(/^[0-9a-f]{64}$/), base64: z.string() })).optional(),
  })
  .loose();

/**
 * An intent found on disk is acted on only if it is one this library wrote for this session's tape
 * (docs/ARCHITECTURE.md, "Confinement"): well formed, its events this session's and ending in its marker,
 * and every file record it would apply the one the tape itself holds for that path — the closest snapshot
 * after the rewind's target, or the undone rewind's undo snapshot — in the workspace the tape recorded.
 * So a planted or edited intent can do no more than a real rewind of this tape could. Throws
 * STORE_TAMPERED, naming what does not fit, and changes nothing. A rewind told an explicit workspace that
 * the tape did not record, then interrupted, is refused here too: its intent cannot be told from a planted one.
 */
export async function checkIntent(
  backend: StorageBackend,
  sessionId: string,
  lastSequence: number,
  value: unknown,
): Promise<void> {
  const tampered = (what: string) =>
    new StoreTamperedError(sessionId, `records/rewind-intent.json ${what}`, { remedy: repairRemedy(sessionId) });
  const malformed = intentShapeProblem(value);
  if (malformed !== undefined) throw tampered(malformed);
  const intent = value as RewindIntent;
  const marker = intent.append[intent.append.length - 1]!;
  const payload = RewindPayload.safeParse(marker.payload);
  if (marker.type !== "session_rewind" || marker.sequence !== intent.markerSequence || !payload.success)
    throw tampered("does not end in its rewind marker");
  if (
    intent.append.some(
      (event, i) =>
        event.sessionId !== sessionId || event.sequence !== marker.sequence - (intent.append.length - 1 - i),
    )
  )
    throw tampered("carries events that are not this session's, or out of sequence");
  if (intent.truncateTo >= intent.markerSequence) throw tampered("cuts the log after its own marker");
  // A byte-range archive is made of the very part the rewind cuts, under the name of its own marker.
  if (
    intent.archive !== undefined &&
    (intent.kind !== "rewind" ||
      intent.archive.name !== archiveName(intent.markerSequence) ||
      (intent.archive.copyAfter !== undefined && intent.archive.copyAfter !== intent.truncateTo))
  )
    throw tampered("archives something other than the part of the log it cuts");
  if (intent.reappend !== undefined) await checkReappend(backend, sessionId, intent, tampered);
  // The before-state is what the workspace held, which the tape does not: it may only touch what the rewind
  // changes (each path checked below against the tape) and what lies below those paths.
  const changed = new Set(intent.files.map((f) => f.path));
  const stray = intent.before?.find((f) => !isAtOrBelowOneOf(f.path, changed));
  if (stray) throw tampered(`would roll back "${stray.path}", a path the rewind does not change`);
  if (intent.files.length === 0 || filesDone(intent, lastSequence)) return;
  if (intent.workspace === undefined) throw tampered("has files to change but no workspace");

  let wanted: Map<string, WantedState>;
  let recorded: Set<string>;
  if (intent.kind === "undo") {
    const undone = await eventAt(backend, sessionId, intent.truncateTo);
    const undo = undone?.type === "session_rewind" ? (undone.payload as RewindPayload).undo : undefined;
    if (!undo) throw tampered("undoes no rewind of the tape that kept an undo snapshot");
    wanted = new Map(undo.files.map((f) => [f.path, f]));
    recorded = new Set([undo.workspace]);
  } else {
    const after: StoredEvent[] = [];
    for await (const event of backend.readEvents(sessionId, { fromSequence: payload.data.targetSequence + 1 }))
      after.push(event);
    wanted = await closestSnapshotPerPath(after);
    recorded = new Set(after.flatMap(recordedWorkspaceOf));
  }
  if (!recorded.has(intent.workspace))
    throw tampered(`would write in "${intent.workspace}", a folder the tape's snapshots were not taken in`);
  for (const file of intent.files) {
    const own = wanted.get(file.path);
    // A path the tape never named, below a folder it lists completely, is one the plan found on disk and
    // wants absent (docs/ARCHITECTURE.md, "Rewind intent", folder listings): what a real rewind does too.
    if (!own && file.kind === "absent" && belowCompleteListing(file.path, wanted)) continue;
    if (!own || canonical({ ...own, path: file.path }) !== canonical(file))
      throw tampered(`would make "${file.path}" something the tape does not hold for it`);
  }
}

/**
 * An undo that streams events back from a byte-range archive puts back exactly the archive of the rewind it
 * undoes (the marker at `truncateTo`), as that marker names it, numbered on from it, its own marker last.
 */
async function checkReappend(
  backend: StorageBackend,
  sessionId: string,
  intent: RewindIntent,
  tampered: (what: string) => StoreTamperedError,
): Promise<void> {
  const { archive, log, first } = intent.reappend!;
  const undone = await eventAt(backend, sessionId, intent.truncateTo);
  const undo = undone?.type === "session_rewind" ? (undone.payload as RewindPayload).undo : undefined;
  if (
    intent.kind !== "undo" ||
    undo?.archive !== archive ||
    canonical(undo.archiveLog) !== canonical(log) ||
    first !== intent.truncateTo + 1 ||
    intent.markerSequence !== first + log.events ||
    intent.append.length !== 1
  )
    throw tampered("puts back events that are not the archive of the rewind it undoes");
}

/** Why `value` is not shaped like a rewind intent at all, or undefined when it is. */
export function intentShapeProblem(value: unknown): string | undefined {
  const shape = IntentShape.safeParse(value);
  if (shape.success) return undefined;
  const issue = shape.error.issues[0];
  const where = issue ? `${issue.path.join(".") || "the record"}: ${issue.message}` : "malformed";
  return `is not a rewind intent (${where})`;
}

/** Same rule as completeIntent: a rewind whose log is cut back already has its files done. */
function filesDone(intent: RewindIntent, lastSequence: number): boolean {
  return (
    lastSequence >= intent.markerSequence ||
    (intent.kind === "rewind" && lastSequence <= intent.truncateTo && intent.truncateTo < intent.markerSequence - 1)
  );
}

async function eventAt(backend: StorageBackend, sessionId: string, sequence: number) {
  for await (const event of backend.readEvents(sessionId, { fromSequence: sequence, toSequence: sequence }))
    return event;
  return undefined;
}

function recordedWorkspaceOf(event: StoredEvent): string[] {
  if (event.type === "session_checkpoint") return [(event.payload as { workspace: string }).workspace];
  const payload = event.payload as RewindPayload;
  return event.type === "session_rewind" && payload.mode === "files" && payload.undo ? [payload.undo.workspace] : [];
}

/** JSON with sorted keys: the same record written and read back compares equal whatever its key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

function isAtOrBelowOneOf(path: string, paths: ReadonlySet<string>): boolean {
  for (let p = path; ; ) {
    if (paths.has(p)) return true;
    if (p === ".") return false;
    const slash = p.lastIndexOf("/");
    p = slash === -1 ? "." : p.slice(0, slash);
  }
}

function belowCompleteListing(path: string, wanted: ReadonlyMap<string, WantedState>): boolean {
  for (let p = path; p !== "."; ) {
    const slash = p.lastIndexOf("/");
    p = slash === -1 ? "." : p.slice(0, slash);
    const folder = wanted.get(p);
    if (folder?.kind === "directory" && folder.complete) return true;
  }
  return false;
}

/** What a person does about an intent that cannot be acted on: the `repair` command (src/maintenance/repair.ts). */
export function repairRemedy(sessionId: string): string {
  return (
    `Run \`agent-tape repair ${sessionId}\` to see the rewind intent; \`agent-tape repair ${sessionId} --discard\` ` +
    "drops it (the files it may have changed stay as they are)."
  );
}

/**
 * The intent record as stored, or undefined when there is none. One that cannot even be read as a record (not
 * JSON) is STORE_TAMPERED naming `repair`, like one that does not fit the tape.
 */
export async function readIntentRecord(
  backend: StorageBackend,
  sessionId: string,
  options: SignalOption = {},
): Promise<unknown> {
  try {
    return await backend.readRecord(sessionId, "rewind-intent", options);
  } catch (error) {
    if (!isAgentTapeError(error, "STORE_TAMPERED")) throw error;
    throw new StoreTamperedError(sessionId, "records/rewind-intent.json cannot be read as a rewind intent", {
      cause: error,
      remedy: repairRemedy(sessionId),
    });
  }
}
