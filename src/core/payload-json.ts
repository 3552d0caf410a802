import { InvalidEventError } from "./errors.js";

/**
 * A payload as the tape will hold it (docs/ARCHITECTURE.md, "Payloads are JSON"): its JSON text, keys
 * sorted, and the value read back from that text, which is what `append` returns, so the caller gets
 * exactly what a later `read` gives. A value JSON would store altered (a function or NaN as null, a
 * Map as {}, a Date as a string, undefined in an array as null) or cannot store (a BigInt, a cycle,
 * a getter that throws) is refused as INVALID_EVENT naming its path; an undefined object field is
 * dropped, as JSON drops it, from the returned value too.
 */
export function payloadAsStored(payload: unknown, where = ""): { json: string; value: unknown } {
  const writer = new JsonWriter();
  try {
    if (payload === undefined) fail("payload", "is undefined (JSON has no undefined)");
    writer.value(payload);
  } catch (error) {
    if (!(error instanceof NotJson)) {
      // Nested past the stack (a RangeError), a Proxy whose traps throw: still the payload's fault.
      throw new InvalidEventError(`The payload${where} cannot be stored as JSON: ${(error as Error).message}.`, [], {
        cause: error,
      });
    }
    throw new InvalidEventError(
      `The payload${where} cannot be stored as JSON: ${error.path} ${error.reason}.`,
      [{ path: error.path, message: error.reason }],
      error.cause === undefined ? {} : { cause: error.cause },
    );
  }
  return { json: writer.json, value: JSON.parse(writer.json) };
}

class NotJson {
  constructor(
    readonly path: string,
    readonly reason: string,
    readonly cause?: unknown,
  ) {}
}

function fail(path: string, reason: string, cause?: unknown): never {
  throw new NotJson(path, reason, cause);
}

/** Why a value of each JS type JSON cannot hold is refused. */
const UNSTORABLE: Partial<Record<string, string>> = {
  bigint: "is a BigInt, which JSON cannot store: store it as a string (or a number if it fits)",
  function: "is a function, which JSON stores as null or drops",
  symbol: "is a symbol, which JSON stores as null or drops",
  undefined: "is undefined, which JSON stores as null in an array",
};

/**
 * Writes sorted-key JSON, refusing what would not read back the same. The path is kept as a stack
 * of keys and joined only for an error: building it per value cost as much as the stringify.
 */
class JsonWriter {
  json = "";
  /** Keys from the payload down to the value being written. */
  private readonly keys: (string | number)[] = ["payload"];
  /** The objects being written around the current value, to catch a cycle. */
  private readonly open: object[] = [];

  private fail(reason: string, cause?: unknown): never {
    return fail(this.keys.join("."), reason, cause);
  }

  value(value: unknown): void {
    const unstorable = UNSTORABLE[typeof value];
    if (unstorable) this.fail(unstorable);
    switch (typeof value) {
      case "string":
        this.json += JSON.stringify(value);
        return;
      case "number":
        if (!Number.isFinite(value)) this.fail(`is ${value}, which JSON stores as null`);
        this.json += JSON.stringify(value);
        return;
      case "boolean":
        this.json += value ? "true" : "false";
        return;
    }
    if (value === null) {
      this.json += "null";
      return;
    }
    const object = value as object;
    if (this.open.includes(object)) this.fail("refers back to an object that contains it (a cycle)");
    this.open.push(object);
    if (Array.isArray(object)) this.array(object);
    else this.object(object);
    this.open.pop();
  }

  private array(list: readonly unknown[]): void {
    this.json += "[";
    for (let i = 0; i < list.length; i++) {
      if (i > 0) this.json += ",";
      this.keys.push(i);
      this.value(list[i]);
      this.keys.pop();
    }
    this.json += "]";
  }

  private object(object: object): void {
    const prototype = Object.getPrototypeOf(object);
    if (prototype !== Object.prototype && prototype !== null) this.fail(notPlain(object));
    this.json += "{";
    let first = true;
    // Sorted, as fast-json-stable-stringify sorts: the same event always has the same bytes.
    for (const key of sortedKeys(object)) {
      this.keys.push(key);
      let field: unknown;
      try {
        field = (object as Record<string, unknown>)[key];
      } catch (error) {
        this.fail(`could not be read: ${(error as Error)?.message ?? String(error)}`, error);
      }
      // JSON's rule, documented: an undefined field is not stored, and not returned either.
      if (field !== undefined) {
        this.json += `${first ? "" : ","}${JSON.stringify(key)}:`;
        first = false;
        this.value(field);
      }
      this.keys.pop();
    }
    this.json += "}";
  }
}

/**
 * The object's keys in the order `sort()` puts them (by UTF-16 code unit, as `<` compares strings). A few keys
 * sorted in place by insertion: `sort()` made a work copy of the array per object, more than the payload's text.
 */
function sortedKeys(object: object): string[] {
  const keys = Object.keys(object);
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    for (; j >= 0 && keys[j]! > key; j--) keys[j + 1] = keys[j]!;
    keys[j + 1] = key;
  }
  return keys;
}

function notPlain(object: object): string {
  if (object instanceof Map) return "is a Map, which JSON stores as {}: store Object.fromEntries(map) or [...map]";
  if (object instanceof Set) return "is a Set, which JSON stores as {}: store [...set]";
  if (object instanceof Date) return "is a Date, which JSON stores as a string: store date.toISOString()";
  const name = (object.constructor as { name?: unknown } | undefined)?.name;
  return (
    `is ${typeof name === "string" && name ? `a ${name}` : "an object with a prototype"}, not a plain object or ` +
    `array: JSON keeps only its own fields and it would read back as a plain object`
  );
}
