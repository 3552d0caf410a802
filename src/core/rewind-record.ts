/**
 * How a rewind's (or an undo's) marker is written on the tape: each path it names once, in a table, and its
 * per-path records as rows that refer to it, hashes in base64url (docs/format.md, "Rewind markers"). The
 * marker names every path it changes up to four times (the change, the undo snapshot, what it wrote, the
 * skipped list), each record with every key spelled out, which a rewind of a whole tree adds to the log, and
 * its undo again (the bytes a path, before and after: docs/format.md, "Rewind markers"). Read back, a marker
 * is the same object it was before it was written: the encoding is only the line's, so everything above the
 * line (and the checks of the payload's schema) sees one form. Lines written before it (no `v` in the
 * payload) read as they are.
 */

import { sliceIsLong, yieldIfLong } from "./time-slices.js";

/** The `v` of a payload written in this form. A marker without it is in the form of the schema itself. */
export const REWIND_RECORD_VERSION = 2;

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

/** The payload as the line holds it: `v` 2, the path table, rows. Anything it cannot encode stays as it is. */
export function compactRewindPayload(payload: unknown): unknown {
  const steps = compacting(payload);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * {@link compactRewindPayload} in time slices: the event loop turns between rows once a slice ran long. In one go,
 * a 1,000-file marker held it 8-24 ms (docs/ARCHITECTURE.md, "Batched file work").
 */
export async function compactRewindPayloadSliced(payload: unknown): Promise<unknown> {
  const steps = compacting(payload);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (sliceIsLong()) await yieldIfLong();
  }
}

/** The compaction, pausing (a bare `yield`) every few rows so a caller may let the event loop turn. */
function* compacting(payload: unknown): Generator<void, unknown> {
  if (!isObject(payload) || payload.v !== undefined || !Array.isArray(payload.changes)) return payload;
  const paths = new PathTable();
  const out: Json = { ...payload, v: REWIND_RECORD_VERSION };
  out.changes = yield* rows(payload.changes, (change) => changeRow(change, paths));
  if (Array.isArray(payload.skipped))
    out.skipped = yield* rows(payload.skipped, (path) => (typeof path === "string" ? paths.index(path) : path));
  const { undo, wrote } = payload;
  if (isObject(undo) && Array.isArray(undo.files))
    out.undo = { ...undo, files: yield* rows(undo.files, (f) => row(f, "kind", SNAPSHOT_KEYS, paths)) };
  if (isObject(wrote) && Array.isArray(wrote.files))
    out.wrote = { ...wrote, files: yield* rows(wrote.files, (f) => row(f, "kind", STATE_KEYS, paths)) };
  out.paths = paths.list;
  return out;
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

/** The marker as it was before {@link compactRewindPayload}; any other payload as it is. */
export function expandRewindPayload(payload: unknown): unknown {
  if (!isObject(payload) || payload.v !== REWIND_RECORD_VERSION || !Array.isArray(payload.paths)) return payload;
  const { v: _v, paths, ...out } = payload;
  const table = paths as string[];
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
  const [kind, ...values] = value as unknown[];
  const record: Json = { [kindKey]: kind };
  const keys = keysOf[kind as string] ?? [];
  keys.forEach((key, i) => {
    const decoded = decodeValue(key, values[i], table);
    if (decoded !== undefined) record[key] = decoded;
  });
  return record;
}

/** `[path index, action, diff row, reason, unrecoverable]`, absent ones null, trailing ones left off. */
function changeRow(change: unknown, paths: PathTable): unknown {
  if (!isObject(change) || !fits(change, CHANGE_KEYS) || typeof change.path !== "string") return change;
  const { diff } = change;
  const diffRow = isObject(diff) && fits(diff, DIFF_KEYS) ? trimmed(DIFF_KEYS.map((key) => diff[key])) : diff;
  return trimmed([paths.index(change.path), change.action, diffRow, change.reason, change.unrecoverable]);
}

function changeOf(value: unknown[], table: string[]): Json {
  const change: Json = {};
  CHANGE_KEYS.forEach((key, i) => {
    let decoded = decodeValue(key, value[i], table);
    if (key === "diff" && Array.isArray(decoded)) decoded = objectOf(DIFF_KEYS, decoded);
    if (decoded !== undefined) change[key] = decoded;
  });
  return change;
}

function objectOf(keys: readonly string[], values: unknown[]): Json {
  const record: Json = {};
  keys.forEach((key, i) => {
    if (values[i] !== undefined && values[i] !== null) record[key] = values[i];
  });
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
