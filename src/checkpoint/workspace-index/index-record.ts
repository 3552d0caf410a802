import type { LockedSession, StorageBackend } from "../../backend/types.js";
import { registerReferenceRoot } from "../../blobs/reference-roots.js";
import type { IndexEntry, WorkspaceIndex } from "./index-entry.js";
import { isPacked, packRecord, unpackRecord, type PackedRecord } from "./packed-record.js";
import { columnsOf, rowsOf, type Columns, type Row } from "./index-columns.js";

// The index is kept as side records of the session: one base holding every entry, then one small
// delta per scan that changed something, so a command that changes one file writes one small
// record instead of the whole index. Deltas are folded into a new base after COMPACT_AFTER of them, or once
// they take more than COMPACT_SHARE of what the base takes (docs/ARCHITECTURE.md, "Workspace index").
export const INDEX_BASE_RECORD = "workspace-index";
const DELTA_PREFIX = "workspace-index.";
const COMPACT_AFTER = 64;
const COMPACT_SHARE = 0.25;
/** A record's size is counted in blocks of this: a file of 4.2 KB takes 8 KiB of a disk. */
const BLOCK_BYTES = 4096;
/** Of a delta, and of a base written before columns (its `entries` as rows). */
const FORMAT = 1;
/** Of a base by columns (index-columns.ts). */
const COLUMNS_FORMAT = 2;

const RACY = 1;
const TOO_LARGE = 2;
const UNREADABLE = 4;

interface BaseRecord {
  v: number;
  workspace: string;
  generation: number;
  /** v 1 */
  entries?: Row[];
  /** v 2 */
  columns?: Columns;
}
interface DeltaRecord {
  v: number;
  generation: number;
  set: Row[];
  removed: string[];
}

const KINDS = { file: "f", directory: "d", symlink: "l", other: "o" } as const;
const KIND_OF = { f: "file", d: "directory", l: "symlink", o: "other" } as const;

function toRow(path: string, e: IndexEntry): Row {
  const value = e.kind === "file" ? (e.hash ?? null) : e.kind === "symlink" ? (e.target ?? null) : null;
  const flags =
    (e.racy ? RACY : 0) | (e.skipped === "too_large" ? TOO_LARGE : 0) | (e.skipped === "unreadable" ? UNREADABLE : 0);
  const row: Row = [
    path,
    KINDS[e.kind],
    e.size,
    String(e.mtimeNs),
    String(e.ctimeNs),
    String(e.ino),
    e.mode,
    value,
    flags,
  ];
  if (e.uid !== undefined) row.push(e.uid, e.gid!);
  return row;
}

function fromRow(row: Row): [string, IndexEntry] {
  const [path, kind, size, mtime, ctime, ino, mode, value, flags, uid, gid] = row;
  const entry: IndexEntry = {
    kind: KIND_OF[kind],
    size,
    mtimeNs: BigInt(mtime),
    ctimeNs: BigInt(ctime),
    ino: BigInt(ino),
    mode,
  };
  if (uid !== undefined && gid !== undefined) Object.assign(entry, { uid, gid });
  if (value !== null && kind === "f") entry.hash = value;
  if (value !== null && kind === "l") entry.target = value;
  if (flags & RACY) entry.racy = true;
  if (flags & TOO_LARGE) entry.skipped = "too_large";
  if (flags & UNREADABLE) entry.skipped = "unreadable";
  return [path, entry];
}

const deltaName = (generation: number) => `${DELTA_PREFIX}${String(generation).padStart(9, "0")}`;
const isDeltaName = (name: string) => name.startsWith(DELTA_PREFIX) && /^\d{9}$/.test(name.slice(DELTA_PREFIX.length));

/** The newest generation on record (0 when there is no index): a cheap listing, to tell a cached copy is current. */
export async function storedGeneration(backend: StorageBackend, sessionId: string): Promise<number> {
  const names = await backend.listRecords(sessionId);
  let newest = -1;
  let hasBase = false;
  for (const name of names) {
    if (name === INDEX_BASE_RECORD) hasBase = true;
    else if (isDeltaName(name)) newest = Math.max(newest, Number(name.slice(DELTA_PREFIX.length)));
  }
  if (newest >= 0) return newest;
  if (!hasBase) return 0;
  const base = (await backend.readRecord(sessionId, INDEX_BASE_RECORD)) as BaseRecord | undefined;
  return base?.generation ?? 0;
}

/** The index as recorded (base plus its deltas), or undefined when the session has none yet. */
export async function loadIndex(backend: StorageBackend, sessionId: string): Promise<WorkspaceIndex | undefined> {
  const storedBase = await backend.readRecord(sessionId, INDEX_BASE_RECORD);
  const base = (await unpackRecord(storedBase)) as BaseRecord | undefined;
  const rows = base?.v === COLUMNS_FORMAT ? rowsOf(base.columns) : base?.v === FORMAT ? base.entries : undefined;
  if (!base || !Array.isArray(rows)) return undefined;
  const index: WorkspaceIndex = {
    workspace: base.workspace,
    generation: base.generation,
    entries: new Map(rows.map(fromRow)),
  };
  const recorded = { baseGeneration: base.generation, baseBytes: storedBytes(storedBase), deltaBytes: 0 };
  const deltas = (await backend.listRecords(sessionId)).filter(isDeltaName).sort();
  for (const name of deltas) {
    const stored = await backend.readRecord(sessionId, name);
    if (isPacked(stored) && stored.generation <= index.generation) continue; // not inflated to be left out
    const delta = (await unpackRecord(stored)) as DeltaRecord | undefined;
    if (delta === undefined && stored !== undefined) return undefined; // damaged: a scan from it would miss its changes
    if (!delta || delta.generation <= index.generation) continue; // left over from before a compaction
    for (const path of delta.removed) index.entries.delete(path);
    for (const row of delta.set) index.entries.set(...fromRow(row));
    index.generation = delta.generation;
    recorded.deltaBytes += storedBytes(stored);
  }
  index.recorded = recorded;
  return index;
}

/** The records one save writes, made beforehand (deflating takes a thread a while for a large index). */
export interface IndexRecords {
  write: { name: string; value: unknown }[];
  /** Deltas a new base makes obsolete. */
  remove: string[];
}

/**
 * Records a scan's result: the paths set or removed since the last record, as a delta, or the
 * whole index as a new base when it is new, moved to another workspace, or has many deltas; made from
 * `index` as it is now (its next generation), written by {@link writeIndexRecords}.
 * Not fsynced: a lost index only makes the next scan cold, while every checkpoint that needs a
 * blob references it from the (fsynced) log.
 */
export async function indexRecords(
  index: WorkspaceIndex,
  changes: { set: readonly string[]; removed: readonly string[]; whole: boolean },
): Promise<IndexRecords> {
  index.generation++;
  let delta: DeltaRecord | PackedRecord | undefined;
  if (!changes.whole && !compactionDue(index)) {
    const record: DeltaRecord = {
      v: FORMAT,
      generation: index.generation,
      set: changes.set.map((path) => toRow(path, index.entries.get(path)!)),
      removed: [...changes.removed],
    };
    delta = await packRecord(record, record.generation);
    const recorded = index.recorded;
    if (recorded !== undefined) {
      const deltaBytes = recorded.deltaBytes + storedBytes(delta);
      // Deltas that would take more than a share of the base's room are folded into a new base instead.
      if (deltaBytes > recorded.baseBytes * COMPACT_SHARE) delta = undefined;
      else index.recorded = { ...recorded, deltaBytes };
    }
  }
  if (delta === undefined) {
    const base: BaseRecord = {
      v: COLUMNS_FORMAT,
      workspace: index.workspace,
      generation: index.generation,
      columns: columnsOf([...index.entries].map(([path, entry]) => toRow(path, entry))),
    };
    // An empty delta of the base's own generation: `storedGeneration` then never reads the base.
    const marker: DeltaRecord = { v: FORMAT, generation: index.generation, set: [], removed: [] };
    // Deltas older than the new base are ignored by loadIndex; remove them so they do not pile up.
    const remove: string[] = [];
    for (let g = index.generation - 1; g > 0 && g > index.generation - 1 - COMPACT_AFTER; g--)
      remove.push(deltaName(g));
    const packed = await packRecord(base, base.generation);
    index.recorded = { baseGeneration: base.generation, baseBytes: storedBytes(packed), deltaBytes: 0 };
    return {
      write: [
        { name: INDEX_BASE_RECORD, value: packed },
        { name: deltaName(index.generation), value: marker },
      ],
      remove,
    };
  }
  return { write: [{ name: deltaName(index.generation), value: delta }], remove: [] };
}

/**
 * Whether the index's next record must be a base: COMPACT_AFTER generations since the last one, counted from
 * the base on record when this process knows it, else by the generation alone (every COMPACT_AFTER-th). Deltas
 * older than a base are removed up to COMPACT_AFTER back, so none is ever left behind.
 */
function compactionDue(index: WorkspaceIndex): boolean {
  if (index.recorded === undefined) return index.generation % COMPACT_AFTER === 0;
  return index.generation - index.recorded.baseGeneration >= COMPACT_AFTER;
}

/** What a stored record takes: its JSON, in whole blocks. */
function storedBytes(stored: unknown): number {
  return Math.ceil(JSON.stringify(stored).length / BLOCK_BYTES) * BLOCK_BYTES;
}

/** Writes what {@link indexRecords} made, in order: the base before its marker, then the obsolete deltas go. */
export async function writeIndexRecords(locked: LockedSession, records: IndexRecords): Promise<void> {
  for (const { name, value } of records.write) await locked.writeRecord(name, value, { durable: false });
  for (const name of records.remove) await locked.deleteRecord(name);
}

// The last index each process saved or loaded, per backend and session: a prune (every rewind runs
// one) then costs a listing of the records instead of parsing the whole index, which grows with the workspace.
const known = new WeakMap<StorageBackend, Map<string, WorkspaceIndex>>();

/** Tells {@link blobsOfIndex} the index as just saved, so it need not read it back. */
export function rememberIndex(backend: StorageBackend, sessionId: string, index: WorkspaceIndex): void {
  let sessions = known.get(backend);
  if (!sessions) known.set(backend, (sessions = new Map()));
  sessions.set(sessionId, index);
}

/**
 * Every blob the recorded index points at: a reference root, never pruned while the index lives. Handed
 * out one by one from the entries, never gathered: a prune looking for one blob stops at it.
 */
export async function blobsOfIndex(backend: StorageBackend, sessionId: string): Promise<Iterable<string>> {
  const generation = await storedGeneration(backend, sessionId);
  if (generation === 0) return [];
  let index = known.get(backend)?.get(sessionId);
  if (index?.generation !== generation) {
    index = await loadIndex(backend, sessionId);
    if (index) rememberIndex(backend, sessionId, index);
  }
  return index ? hashesOf(index) : [];
}

function* hashesOf(index: WorkspaceIndex): Iterable<string> {
  for (const entry of index.entries.values()) if (entry.hash !== undefined) yield entry.hash;
}

// Loaded with every module that writes an index, so any prune in such a process keeps its blobs.
registerReferenceRoot(blobsOfIndex);
