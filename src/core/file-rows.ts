/**
 * How the payloads that list files are written on the tape (docs/format.md, "Payloads as rows"): a checkpoint's
 * snapshots, a file-states event's states, a rewind's (or an undo's) marker. Each path they name is written
 * once, in a table where each path is the characters it adds to the one before it, and each per-path record is a
 * row that names its path by its index there, hashes in base64url. In the form of the schema, a record spells out
 * every key and its path in full, and a hash in 64 hex digits: about twice the bytes. Read back, a payload is the
 * same object it was before it was written: the encoding is only the line's, so everything above the line (and
 * the checks of the payload's schema) sees one form. Lines written before it (no `v` in the payload) read as they
 * are, and markers of the form before (`v` 2: a table of whole paths).
 */

import { sliceIsLong, yieldIfLong } from "./time-slices.js";

/** The `v` of a payload written in this form. A payload without it is in the form of the schema itself. */
export const ROWS_VERSION = 3;
/** A marker's rows with a table of whole paths, written before {@link ROWS_VERSION}: read, no longer written. */
const WHOLE_PATHS_VERSION = 2;
/**
 * The `v` of a payload that had a `v`, `paths` or `shared` of its own (a loose schema lets one through): written
 * whole under `as`, so it is never taken for rows and keeps its own keys.
 */
const AS_GIVEN_VERSION = 0;

const REWIND = "session_rewind";
const CHECKPOINT = "session_checkpoint";
const FILE_STATES = "session_file_states";

/** True for the event types whose payloads are written as rows. */
export function writtenAsRows(type: string): boolean {
  return type === REWIND || type === CHECKPOINT || type === FILE_STATES;
}

type Json = Record<string, unknown>;

/** The keys of each record kind, in row order after the kind (the path first: it is the table's index). */
const SNAPSHOT_KEYS: Record<string, readonly string[]> = {
  blob: ["path", "blob", "bytes", "mode", "uid", "gid"],
  absent: ["path"],
  symlink: ["path", "target", "uid", "gid"],
  directory: ["path", "mode", "complete", "uid", "gid"],
  skipped: ["path", "reason", "detail"],
};
const STATE_KEYS: Record<string, readonly string[]> = {
  file: ["path", "sha256", "mode"],
  absent: ["path"],
  symlink: ["path", "target"],
  directory: ["path", "mode", "complete"],
  unknown: ["path", "reason"],
};
const CHANGE_KEYS = ["path", "action", "diff", "reason", "unrecoverable"] as const;
const DIFF_KEYS = ["unit", "insertions", "deletions", "reason"] as const;
/** Keys holding a sha256 (64 lowercase hex digits), written as 43 base64url characters. */
const HASH_KEYS = new Set(["blob", "sha256"]);
const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** The payload of an event of `type` as the line holds it. Anything it cannot encode stays as it is. */
export function compactPayload(type: string, payload: unknown): unknown {
  const steps = compacting(type, payload);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * {@link compactPayload} in time slices: the event loop turns between rows once a slice ran long. In one go,
 * a 1,000-file marker held it 8-24 ms (docs/ARCHITECTURE.md, "Batched file work").
 */
export async function compactPayloadSliced(type: string, payload: unknown): Promise<unknown> {
  const steps = compacting(type, payload);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (sliceIsLong()) await yieldIfLong();
  }
}

/**
 * The compaction, pausing (a bare `yield`) every few rows so a caller may let the event loop turn. A payload the rows
 * cannot say so that it reads back the same (its own `v`, `paths` or `shared`; a list item that is an array, which a
 * reader would take for a row; a skipped entry that is not a path) is written whole under `as`.
 */
function* compacting(type: string, payload: unknown): Generator<void, unknown> {
  if (!writtenAsRows(type) || !isObject(payload)) return payload;
  if (payload.v !== undefined || Object.hasOwn(payload, "paths") || Object.hasOwn(payload, "shared"))
    return { v: AS_GIVEN_VERSION, as: payload };
  try {
    return yield* asRows(type, payload);
  } catch (error) {
    if (error === NOT_AS_ROWS) return { v: AS_GIVEN_VERSION, as: payload };
    throw error;
  }
}

/** Thrown by the row makers for an item a reader would not read back as it was. */
const NOT_AS_ROWS = Symbol("not as rows");

function* asRows(type: string, payload: Json): Generator<void, unknown> {
  const paths = new PathTable();
  const out: Json = { ...payload, v: ROWS_VERSION };
  if (type !== REWIND) {
    if (!Array.isArray(payload.files)) return payload;
    const keys = type === CHECKPOINT ? SNAPSHOT_KEYS : STATE_KEYS;
    out.files = yield* rows(payload.files, (f) => row(f, "kind", keys, paths));
  } else {
    if (!Array.isArray(payload.changes)) return payload;
    out.changes = yield* rows(payload.changes, (change) => changeRow(change, paths));
    if (Array.isArray(payload.skipped)) out.skipped = yield* rows(payload.skipped, (path) => skippedRow(path, paths));
    const { undo, wrote } = payload;
    if (isObject(undo) && Array.isArray(undo.files))
      out.undo = { ...undo, files: yield* rows(undo.files, (f) => row(f, "kind", SNAPSHOT_KEYS, paths)) };
    if (isObject(wrote) && Array.isArray(wrote.files))
      out.wrote = { ...wrote, files: yield* rows(wrote.files, (f) => row(f, "kind", STATE_KEYS, paths)) };
  }
  const { rests, shared } = yield* prefixCoded(paths.list);
  out.paths = rests;
  out.shared = shared;
  return out;
}

function skippedRow(path: unknown, paths: PathTable): unknown {
  if (typeof path !== "string") throw NOT_AS_ROWS;
  return paths.index(path);
}

/**
 * Each path as the characters it adds to the one before it (`rests`) and how many it keeps (`shared`), never
 * splitting a surrogate pair: a table of a tree's paths, mostly in order, keeps most of each.
 */
function* prefixCoded(list: readonly string[]): Generator<void, { rests: string[]; shared: number[] }> {
  const rests = new Array<string>(list.length);
  const shared = new Array<number>(list.length);
  let before = "";
  for (let i = 0; i < list.length; i++) {
    const path = list[i]!;
    const most = Math.min(path.length, before.length);
    let n = 0;
    while (n < most && path.charCodeAt(n) === before.charCodeAt(n)) n++;
    if (n > 0 && n < path.length && isHighSurrogate(path.charCodeAt(n - 1))) n--;
    rests[i] = path.slice(n);
    shared[i] = n;
    before = path;
    if (i % 256 === 255) yield;
  }
  return { rests, shared };
}

/** The whole paths of a table written by {@link prefixCoded}, or undefined when it is not one. */
function wholePaths(rests: unknown, shared: unknown): string[] | undefined {
  if (!Array.isArray(rests) || !Array.isArray(shared) || shared.length !== rests.length) return undefined;
  const out = new Array<string>(rests.length);
  let before = "";
  for (let i = 0; i < rests.length; i++) {
    const rest = rests[i];
    const n = shared[i];
    if (typeof rest !== "string" || !Number.isSafeInteger(n) || n < 0 || n > before.length) return undefined;
    before = out[i] = before.slice(0, n) + rest;
  }
  return out;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** `list.map(fn)` (holes kept as holes), pausing every 64 items. */
function* rows(list: readonly unknown[], fn: (item: unknown) => unknown): Generator<void, unknown[]> {
  const out = new Array<unknown>(list.length);
  for (let i = 0; i < list.length; i++) {
    if (i in list) out[i] = fn(list[i]);
    if (i % 64 === 63) yield;
  }
  return out;
}

/** The payload of an event of `type` as it was before {@link compactPayload}; any other payload as it is. */
export function expandPayload(type: string, payload: unknown): unknown {
  if (!writtenAsRows(type) || !isObject(payload)) return payload;
  if (payload.v === AS_GIVEN_VERSION && "as" in payload && Object.keys(payload).length === 2) return payload.as;
  let table: string[] | undefined;
  if (payload.v === ROWS_VERSION) table = wholePaths(payload.paths, payload.shared);
  else if (payload.v === WHOLE_PATHS_VERSION && type === REWIND && Array.isArray(payload.paths))
    table = payload.paths as string[];
  if (table === undefined) return payload;
  const { v: _v, paths: _paths, ...out } = payload;
  if (payload.v === ROWS_VERSION) delete out.shared;
  if (type !== REWIND) {
    const keys = type === CHECKPOINT ? SNAPSHOT_KEYS : STATE_KEYS;
    if (Array.isArray(out.files)) out.files = out.files.map((f) => recordOf(f, "kind", keys, table));
    return out;
  }
  const path = (value: unknown) => (typeof value === "number" ? table[value] : value);
  if (Array.isArray(out.changes)) out.changes = out.changes.map((c) => (Array.isArray(c) ? changeOf(c, table) : c));
  if (Array.isArray(out.skipped)) out.skipped = out.skipped.map(path);
  if (isObject(out.undo) && Array.isArray(out.undo.files))
    out.undo = { ...out.undo, files: out.undo.files.map((f) => recordOf(f, "kind", SNAPSHOT_KEYS, table)) };
  if (isObject(out.wrote) && Array.isArray(out.wrote.files))
    out.wrote = { ...out.wrote, files: out.wrote.files.map((f) => recordOf(f, "kind", STATE_KEYS, table)) };
  return out;
}

class PathTable {
  readonly list: string[] = [];
  private readonly at = new Map<string, number>();
  index(path: string): number {
    let i = this.at.get(path);
    if (i === undefined) {
      i = this.list.length;
      this.list.push(path);
      this.at.set(path, i);
    }
    return i;
  }
}

/** `[kind, path index, …the kind's other values in key order]`, trailing absent values left off. */
function row(record: unknown, kindKey: string, keysOf: Record<string, readonly string[]>, paths: PathTable): unknown {
  if (Array.isArray(record)) throw NOT_AS_ROWS;
  if (!isObject(record)) return record;
  const kind = record[kindKey];
  const keys = typeof kind === "string" ? keysOf[kind] : undefined;
  if (keys === undefined || !fits(record, [kindKey, ...keys]) || typeof record.path !== "string") return record;
  return trimmed([kind, ...keys.map((key) => encodeValue(key, record[key], paths))]);
}

function recordOf(
  value: unknown,
  kindKey: string,
  keysOf: Record<string, readonly string[]>,
  table: string[],
): unknown {
  if (!Array.isArray(value)) return value;
  const kind = value[0] as string;
  const record: Json = {};
  for (const [key, i] of placesOf(keysOf[kind] ?? [], kindKey)) {
    const decoded = i === 0 ? kind : decodeValue(key, value[i], table);
    if (decoded !== undefined) record[key] = decoded;
  }
  return record;
}

const places = new WeakMap<readonly string[], readonly (readonly [key: string, at: number])[]>();

/**
 * The keys of a row (`first`, then `keys`) in sorted order, each with its place in the row: a record read back has
 * its keys in the order any payload read back has them, that of its line's JSON (sorted), not the row's.
 */
function placesOf(keys: readonly string[], first?: string): readonly (readonly [key: string, at: number])[] {
  let found = places.get(keys);
  if (found === undefined) {
    const all = first === undefined ? keys : [first, ...keys];
    found = all.map((key, i) => [key, i] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    places.set(keys, found);
  }
  return found;
}

/** `[path index, action, diff row, reason, unrecoverable]`, absent ones null, trailing ones left off. */
function changeRow(change: unknown, paths: PathTable): unknown {
  if (Array.isArray(change)) throw NOT_AS_ROWS;
  if (!isObject(change) || !fits(change, CHANGE_KEYS) || typeof change.path !== "string") return change;
  const { diff } = change;
  if (Array.isArray(diff)) throw NOT_AS_ROWS; // a reader takes an array for a diff's row
  const diffRow = isObject(diff) && fits(diff, DIFF_KEYS) ? trimmed(DIFF_KEYS.map((key) => diff[key])) : diff;
  return trimmed([paths.index(change.path), change.action, diffRow, change.reason, change.unrecoverable]);
}

function changeOf(value: unknown[], table: string[]): Json {
  const change: Json = {};
  for (const [key, i] of placesOf(CHANGE_KEYS)) {
    let decoded = decodeValue(key, value[i], table);
    if (key === "diff" && Array.isArray(decoded)) decoded = objectOf(DIFF_KEYS, decoded);
    if (decoded !== undefined) change[key] = decoded;
  }
  return change;
}

function objectOf(keys: readonly string[], values: unknown[]): Json {
  const record: Json = {};
  for (const [key, i] of placesOf(keys)) if (values[i] !== undefined && values[i] !== null) record[key] = values[i];
  return record;
}

function encodeValue(key: string, value: unknown, paths: PathTable): unknown {
  if (key === "path") return paths.index(value as string);
  if (HASH_KEYS.has(key) && typeof value === "string") return Buffer.from(value, "hex").toString("base64url");
  return value;
}

function decodeValue(key: string, value: unknown, table: string[]): unknown {
  if (value === undefined || value === null) return undefined;
  if (key === "path") return table[value as number];
  if (HASH_KEYS.has(key) && typeof value === "string") return Buffer.from(value, "base64url").toString("hex");
  return value;
}

/** True when every key the record has is one of `keys` and none is null (a row writes absent as null). */
function fits(record: Json, keys: readonly string[]): boolean {
  for (const key in record) {
    if (!keys.includes(key) || record[key] === null) return false;
    if (HASH_KEYS.has(key) && !(typeof record[key] === "string" && HEX_SHA256.test(record[key] as string)))
      return false;
  }
  return true;
}

/** Absent values as null, the trailing ones left off. */
function trimmed(values: unknown[]): unknown[] {
  let end = values.length;
  while (end > 0 && values[end - 1] === undefined) end--;
  return values.slice(0, end).map((value) => (value === undefined ? null : value));
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
