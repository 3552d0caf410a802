import { promisify } from "node:util";
import { constants } from "node:buffer";
import { deflateRaw, inflateRaw } from "node:zlib";

// The workspace index's records, deflated when large (docs/ARCHITECTURE.md, "Workspace index", the records):
// a base of 5,000 paths is about 1 MB of JSON and 0.35 MB deflated and in base64, most of a session's disk
// beside its blobs. Deflated on libuv's threads, so a large index does not hold the event loop.

/** Under this many bytes of JSON a record is stored as it is: a small delta stays readable and costs no thread. */
export const PACK_RECORDS_FROM = 4096;

/** A record as stored deflated: its generation outside, so a listing's check of it needs no inflating. */
export interface PackedRecord {
  v: 2;
  generation: number;
  deflated: string;
}

const deflateAsync = promisify(deflateRaw);
const inflateAsync = promisify(inflateRaw);

/** `record` (of `generation`) as it is, or deflated when its JSON is large. */
export async function packRecord<T extends object>(record: T, generation: number): Promise<T | PackedRecord> {
  const text = JSON.stringify(record);
  if (text.length < PACK_RECORDS_FROM) return record;
  // Level 1: the index is rewritten at every compaction and by every first scan; level 6 saved 5 % more.
  const deflated = await deflateAsync(Buffer.from(text, "utf8"), { level: 1 });
  return { v: 2, generation, deflated: deflated.toString("base64") };
}

/**
 * A stored record as written before packing: a packed one inflated and parsed, any other value as it is.
 * Undefined when a packed one does not inflate or parse: the index is then lost, and the next scan is cold.
 */
export async function unpackRecord(stored: unknown): Promise<unknown> {
  if (!isPacked(stored)) return stored;
  try {
    // No more than one string can hold: a damaged or planted record cannot make the inflate fill the memory.
    const deflated = Buffer.from(stored.deflated, "base64");
    const text = await inflateAsync(deflated, { maxOutputLength: constants.MAX_STRING_LENGTH });
    return JSON.parse(text.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

export function isPacked(stored: unknown): stored is PackedRecord {
  const packed = stored as Partial<PackedRecord> | null;
  return (
    typeof packed === "object" &&
    packed !== null &&
    packed.v === 2 &&
    typeof packed.generation === "number" &&
    typeof packed.deflated === "string"
  );
}
