import stableStringify from "fast-json-stable-stringify";
import { sliceIsLong, yieldIfLong } from "./time-slices.js";

/**
 * The text fast-json-stable-stringify gives for `value` (a JSON value: what a payload is once read back from its
 * JSON), made in time slices: the event loop turns between the items of an array once a slice ran long. A
 * rewind's marker over 1,000 files is about 180 KB of rows; written in one go it held the loop for 5-18 ms
 * (docs/ARCHITECTURE.md, "Batched file work"). Objects and arrays are walked here, each array item written by the
 * library itself, so the bytes are the same (test/core/stable-json-sliced.property.test.ts).
 */
export async function stableJsonSliced(value: unknown): Promise<string | undefined> {
  if (!isContainer(value)) return stableStringify(value);
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (sliceIsLong()) await yieldIfLong();
      if (i) out += ",";
      const item: unknown = value[i];
      out += (isContainer(item) && !isSmall(item) ? await stableJsonSliced(item) : stableStringify(item)) ?? "null";
    }
    return `${out}]`;
  }
  let out = "";
  for (const key of Object.keys(value).sort()) {
    const item = (value as Record<string, unknown>)[key];
    const text = isContainer(item) ? await stableJsonSliced(item) : stableStringify(item);
    if (!text) continue;
    if (out) out += ",";
    out += `${JSON.stringify(key)}:${text}`;
  }
  return `{${out}}`;
}

/** An array or a plain object with no toJSON of its own (as JSON.parse makes them). */
function isContainer(value: unknown): value is object {
  return typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON !== "function";
}

/** A row of a few values: written in one go. */
function isSmall(value: object): boolean {
  return Array.isArray(value) ? value.length <= 16 : Object.keys(value).length <= 16;
}
