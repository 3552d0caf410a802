import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RewindPayload } from "../../src/core/events.js";
import { parseRewindPayloadInSlices } from "../../src/core/rewind-payload-sliced.js";
import { SLICE_MS } from "../../src/core/time-slices.js";
import { largeMarker } from "../helpers/large-marker.js";
import { rounds } from "../helpers/rounds.js";
import { withTimerTurns } from "../helpers/timer-turns.js";

// A rewind's marker checked in time slices must come out as the schema parses it whole: the same entries kept,
// the same unknown keys dropped or kept, the same refusals (a refusal here sends the caller to the whole parse,
// for its error). Generated markers: well formed ones, and ones with an entry, a field or a list gone wrong.
const RUNS = rounds(150, 1500);

/** Mostly `usual`, now and then `odd` (a value the schema refuses, or one it treats another way). */
const rarely = <T, U>(usual: fc.Arbitrary<T>, odd: fc.Arbitrary<U>) =>
  fc.oneof({ weight: 150, arbitrary: usual }, { weight: 1, arbitrary: odd });
const hex = rarely(fc.stringMatching(/^[0-9a-f]{64}$/), fc.string());
const count = rarely(fc.nat(), fc.integer({ min: -3, max: -1 }));
const extra = fc.dictionary(fc.constantFrom("extra", "__proto__", "note", "v"), fc.jsonValue({ maxDepth: 2 }), {
  maxKeys: 2,
});
const owner = { uid: count, gid: count };
const snapshot = fc.oneof(
  fc.record(
    { path: fc.string(), kind: fc.constant("blob"), blob: hex, bytes: count, mode: count, ...owner },
    { requiredKeys: ["path", "kind", "blob", "bytes", "mode"] },
  ),
  fc.record({ path: fc.string(), kind: fc.constant("absent") }),
  fc.record({ path: fc.string(), kind: rarely(fc.constant("symlink"), fc.constant("link")), target: fc.string() }),
  fc.record(
    { path: fc.string(), kind: fc.constant("directory"), mode: count, complete: fc.boolean() },
    { requiredKeys: ["path", "kind", "mode"] },
  ),
  fc.record({
    path: fc.string(),
    kind: fc.constant("skipped"),
    reason: rarely(fc.constantFrom("too_large", "unreadable", "over_budget"), fc.constant("huge")),
  }),
);
const state = fc.oneof(
  fc.record({ path: fc.string(), kind: fc.constant("file"), sha256: hex, mode: count }),
  fc.record({ path: fc.string(), kind: fc.constant("absent") }),
  fc.record({ path: rarely(fc.string(), fc.nat()), kind: fc.constant("symlink"), target: fc.string() }),
);
const change = fc.record(
  {
    path: fc.string(),
    action: rarely(fc.constantFrom("restore", "delete", "skip"), fc.constant("restored")),
    reason: fc.string(),
    diff: fc.record(
      { unit: fc.constantFrom("lines", "bytes"), insertions: count, deletions: count, reason: fc.string() },
      { requiredKeys: ["unit", "insertions", "deletions"] },
    ),
    unrecoverable: fc.array(fc.record({ path: fc.string(), reason: fc.string() }), { maxLength: 2 }),
  },
  { requiredKeys: ["path", "action"] },
);
/** An entry as generated, with unknown keys now and then (dropped by the schema), or something else entirely. */
const entry = <T>(arbitrary: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 160, arbitrary },
    { weight: 40, arbitrary: fc.tuple(arbitrary, extra).map(([e, x]) => ({ ...x, ...e })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
  );
const list = <T>(arbitrary: fc.Arbitrary<T>) =>
  rarely(fc.array(entry(arbitrary), { maxLength: 12 }), fc.jsonValue({ maxDepth: 1 }));
const marker = fc
  .record(
    {
      targetSequence: count,
      mode: rarely(fc.constantFrom("all", "files", "conversation"), fc.constant("some")),
      undoOf: rarely(fc.integer({ min: 1, max: 9 }), fc.constant(0)),
      filesRestored: count,
      filesDeleted: count,
      skipped: fc.array(fc.string(), { maxLength: 3 }),
      changes: list(change),
      eventsRemoved: count,
      blobsPruned: count,
      reappendedRanges: rarely(fc.constant([[3, 5]]), fc.constant([[5, 3]])),
      undo: rarely(
        fc.record(
          { workspace: fc.string(), files: list(snapshot), archive: fc.string(), junk: fc.nat() },
          { requiredKeys: ["workspace", "files"] },
        ),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      wrote: rarely(fc.record({ workspace: fc.string(), files: list(state) }), fc.constant(null)),
    },
    { requiredKeys: ["targetSequence", "mode", "filesRestored", "filesDeleted", "skipped", "changes"] },
  )
  .chain((m) => extra.map((x) => ({ ...x, ...m })));

describe("parseRewindPayloadInSlices", () => {
  it("gives what RewindPayload.safeParse gives, or undefined where it refuses", async () => {
    await fc.assert(
      fc.asyncProperty(marker, async (payload) => {
        const whole = RewindPayload.safeParse(payload);
        const sliced = await parseRewindPayloadInSlices(payload);
        expect(sliced === undefined, JSON.stringify(whole.error?.issues ?? null)).toBe(!whole.success);
        if (whole.success) expect(sliced).toStrictEqual(whole.data);
      }),
      { numRuns: RUNS },
    );
  });

  it("lets the event loop turn while it checks a marker over 20,000 paths", async () => {
    const payload = largeMarker(20_000);
    const { result: sliced, tookMs: took, turns } = await withTimerTurns(() => parseRewindPayloadInSlices(payload));
    expect(sliced).toStrictEqual(RewindPayload.parse(payload));
    // Checked whole this takes far more than a slice; in slices, timers run while it goes on.
    expect(took).toBeGreaterThan(4 * SLICE_MS);
    expect(turns).toBeGreaterThan(0);
  });
});
