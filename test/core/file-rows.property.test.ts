// The rows a checkpoint, a file-states event and a rewind marker are written as (src/core/file-rows.ts), against
// the model that defines them: a payload written as a line and read back is the payload, whatever it holds. The
// payloads are generated in the shapes those events take and in hostile ones: paths sharing long prefixes, paths
// holding emoji (two UTF-16 units), lone surrogates, NUL, quotes, `..`, the empty path; the same path twice;
// hashes that are hex and hashes that only look it; records with keys the rows do not know, nulls, missing
// values, numbers where strings go; payloads carrying their own `v`, `paths` or `shared`; any JSON at all.
import fc from "fast-check";
import stableStringify from "fast-json-stable-stringify";
import { describe, expect, it } from "vitest";
import { parseEventLine, serializeEvent } from "../../src/core/envelope.js";
import { compactPayload, compactPayloadSliced, expandPayload } from "../../src/core/file-rows.js";
import type { StoredEvent } from "../../src/index.js";
import { rounds } from "../helpers/rounds.js";

const TYPES = ["session_checkpoint", "session_file_states", "session_rewind"] as const;

/** Pieces paths are made of: prefixes a tree shares, and the characters that break naive encoders. */
const piece = fc.constantFrom(
  "src/",
  "src/deep/",
  "a",
  "b.ts",
  "..",
  "/",
  "é",
  "\u{1F600}",
  "\u{1F601}",
  "\uD800",
  "\uDC00",
  "\u0000",
  '"',
  "\\",
  " ",
);
const path = fc.array(piece, { maxLength: 6 }).map((parts) => parts.join(""));
const hex = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("hex"));
/** A hash, or a string that is almost one (upper case, short, not hex). */
const hashLike = fc.oneof(
  { weight: 4, arbitrary: hex },
  { weight: 1, arbitrary: fc.constantFrom("ABC", "0".repeat(63), "F".repeat(64), "g".repeat(64), "") },
);
const small = fc.nat(70000);
/** A value left out, or present, or null, or of another type than the schema's. */
const maybe = <T>(value: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 6, arbitrary: value },
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.array(fc.nat(3), { maxLength: 3 })) },
  );

function defined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}

const extra = fc.option(fc.dictionary(fc.constantFrom("extra", "kind2", "path2"), fc.jsonValue({ maxDepth: 1 })), {
  nil: {},
});

const snapshot = fc
  .tuple(
    fc.constantFrom("blob", "absent", "symlink", "directory", "skipped", "fifo", 7),
    path,
    fc.record({
      blob: maybe(hashLike),
      bytes: maybe(small),
      mode: maybe(small),
      uid: maybe(small),
      gid: maybe(small),
      target: maybe(path),
      complete: maybe(fc.boolean()),
      reason: maybe(fc.constantFrom("too_large", "unreadable")),
      detail: maybe(fc.string()),
    }),
    extra,
  )
  .map(([kind, p, values, more]) => {
    const keep: Record<string, readonly string[]> = {
      blob: ["blob", "bytes", "mode", "uid", "gid"],
      symlink: ["target", "uid", "gid"],
      directory: ["mode", "complete", "uid", "gid"],
      skipped: ["reason", "detail"],
      fifo: ["mode"],
    };
    const fields = keep[String(kind)] ?? [];
    const chosen = Object.fromEntries(fields.map((key) => [key, values[key as keyof typeof values]]));
    return defined({ kind, path: p, ...chosen, ...more });
  });

const state = fc
  .tuple(
    fc.constantFrom("file", "absent", "symlink", "directory", "unknown"),
    path,
    fc.record({ sha256: maybe(hashLike), mode: maybe(small), target: maybe(path), complete: maybe(fc.boolean()) }),
    fc.record({ reason: maybe(fc.string()) }),
    extra,
  )
  .map(([kind, p, values, { reason }, more]) => {
    const keep: Record<string, Record<string, unknown>> = {
      file: { sha256: values.sha256, mode: values.mode },
      symlink: { target: values.target },
      directory: { mode: values.mode, complete: values.complete },
      unknown: { reason },
    };
    return defined({ kind, path: p, ...(keep[kind] ?? {}), ...more });
  });

const change = fc
  .tuple(
    path,
    maybe(fc.constantFrom("restore", "delete", "skip")),
    maybe(
      fc.record(
        { unit: fc.constantFrom("lines", "bytes"), insertions: small, deletions: small, reason: fc.string() },
        { requiredKeys: ["unit", "insertions", "deletions"] },
      ),
    ),
    maybe(fc.string()),
    maybe(fc.array(fc.record({ path, reason: fc.string() }), { maxLength: 2 })),
    extra,
  )
  .map(([p, action, diff, reason, unrecoverable, more]) =>
    defined({ path: p, action, diff, reason, unrecoverable, ...more }),
  );

/** What the payload may carry besides its lists: its own fields, and sometimes keys the rows use themselves. */
const own = fc.record(
  {
    tool: fc.string(),
    workspace: fc.string(),
    callId: fc.string(),
    v: fc.oneof(fc.constantFrom(0, 2, 3), fc.string()),
    paths: fc.oneof(fc.array(fc.string(), { maxLength: 2 }), fc.string()),
    shared: fc.array(fc.nat(5), { maxLength: 2 }),
    as: fc.jsonValue({ maxDepth: 1 }),
  },
  { requiredKeys: ["workspace"] },
);

const listOf = <T>(item: fc.Arbitrary<T>) =>
  // the same record again, now and then: a path named twice takes one place in the table
  fc
    .array(item, { maxLength: 12 })
    .chain((items) =>
      items.length === 0 ? fc.constant(items) : fc.subarray(items).map((again) => [...items, ...again]),
    );

const filesPayload = (record: fc.Arbitrary<Record<string, unknown>>) =>
  fc
    .tuple(own, listOf(record), fc.boolean())
    .map(([fields, files, plain]) => (plain ? { workspace: fields.workspace, files } : { ...fields, files }));

const markerPayload = fc
  .tuple(
    own,
    listOf(change),
    fc.array(fc.oneof(path, fc.integer()), { maxLength: 3 }),
    fc.option(fc.record({ workspace: fc.string(), files: listOf(snapshot), archive: fc.string() }), { nil: undefined }),
    fc.option(fc.record({ workspace: fc.string(), files: listOf(state) }), { nil: undefined }),
    fc.boolean(),
  )
  .map(([fields, changes, skipped, undo, wrote, plain]) =>
    defined({
      ...(plain ? {} : fields),
      targetSequence: 2,
      mode: "files",
      filesRestored: 1,
      filesDeleted: 0,
      eventsRemoved: 0,
      blobsPruned: 0,
      changes,
      skipped,
      undo,
      wrote,
    }),
  );

const event = fc.oneof(
  fc.record({ type: fc.constant("session_checkpoint"), payload: filesPayload(snapshot) }),
  fc.record({ type: fc.constant("session_file_states"), payload: filesPayload(state) }),
  fc.record({ type: fc.constant("session_rewind"), payload: markerPayload }),
  // any JSON under any of the three types, and the shapes of one type under another's name
  fc.record({
    type: fc.constantFrom(...TYPES),
    payload: fc.oneof(fc.jsonValue({ maxDepth: 3 }), filesPayload(snapshot), markerPayload),
  }),
);

function stored(type: string, payload: unknown): StoredEvent {
  return { v: 1, id: "e", sessionId: "s", sequence: 4, type, createdAt: "t", payload };
}

describe("payloads written as rows read back as they were (model: the payload itself)", () => {
  it("a line written from any payload of the three types reads back as that payload", async () => {
    await fc.assert(
      fc.asyncProperty(event, async ({ type, payload }) => {
        // as any payload is read back: from its sorted-key JSON, keys in that order
        const asJson = JSON.parse(stableStringify(payload)) as unknown;
        const text = serializeEvent(stored(type, payload));
        const read = parseEventLine(text);
        expect(typeof read).toBe("object");
        expect((read as StoredEvent).payload).toStrictEqual(asJson);
        expect(JSON.stringify((read as StoredEvent).payload)).toBe(JSON.stringify(asJson));
        // the sliced compaction writes the same rows, and the rows expand to the payload without the envelope
        const rows = compactPayload(type, payload);
        expect(await compactPayloadSliced(type, payload)).toStrictEqual(rows);
        expect(expandPayload(type, JSON.parse(JSON.stringify(rows)))).toStrictEqual(asJson);
        // a line read back and written again is the same line
        expect(serializeEvent(read as StoredEvent)).toBe(text);
      }),
      { numRuns: rounds(300, 5000) },
    );
  });

  it("a table a hand edit broke is never read as paths: the payload stays in its rows", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...TYPES),
        fc.oneof(fc.constant(-1), fc.constant(99), fc.constant(1.5), fc.constant("2"), fc.constant(null)),
        (type, bad) => {
          const payload =
            type === "session_rewind"
              ? {
                  changes: [
                    { path: "src/a", action: "delete" },
                    { path: "src/b", action: "delete" },
                  ],
                  skipped: [],
                }
              : {
                  workspace: "/w",
                  files: [
                    { path: "src/a", kind: "absent" },
                    { path: "src/b", kind: "absent" },
                  ],
                };
          const rows = JSON.parse(JSON.stringify(compactPayload(type, payload))) as { shared: unknown[] };
          expect(rows.shared).toEqual([0, 4]);
          rows.shared[1] = bad;
          expect(expandPayload(type, rows)).toStrictEqual(rows);
        },
      ),
      { numRuns: rounds(30, 300) },
    );
  });
});
