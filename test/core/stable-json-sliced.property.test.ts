import stableStringify from "fast-json-stable-stringify";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compactPayload } from "../../src/core/file-rows.js";
import { stableJsonSliced } from "../../src/core/stable-json-sliced.js";
import { newSlice } from "../../src/core/time-slices.js";
import { largeMarker } from "../helpers/large-marker.js";
import { rounds } from "../helpers/rounds.js";

// The marker text made in time slices must be byte for byte the one made in one go: a line's bytes decide its
// hash and what a reader gets (docs/format.md). Generated JSON values of every shape, hostile strings included,
// and rewind markers over many paths, compacted as the log holds them.
const RUNS = rounds(200, 2000);

describe("stableJsonSliced", () => {
  it("gives fast-json-stable-stringify's text for any JSON value", async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), async (value) => {
        expect(await stableJsonSliced(value)).toBe(stableStringify(value));
      }),
      { numRuns: RUNS },
    );
  });

  it("gives the same text for values with holes JSON drops or nulls (undefined fields and items, toJSON)", async () => {
    const odd = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.constantFrom(undefined, null, Number.NaN, Number.POSITIVE_INFINITY, -0, "", "\u2028", "\ud800"),
        fc.string({ unit: "binary" }),
        fc.double(),
        fc.array(tie("value"), { maxLength: 40 }),
        fc.dictionary(fc.string({ unit: "binary" }), tie("value"), { maxKeys: 8 }),
        fc.date({ noInvalidDate: true }),
      ),
    })).value;
    await fc.assert(
      fc.asyncProperty(odd, async (value) => {
        expect(await stableJsonSliced(value)).toBe(stableStringify(value));
      }),
      { numRuns: RUNS },
    );
  });

  it("gives the compact marker line's text for a marker over 20,000 paths, letting the event loop turn", async () => {
    const payload = largeMarker(20_000);
    const compact = compactPayload("session_rewind", payload);
    newSlice();
    let turns = 0;
    const counting = setInterval(() => turns++, 0);
    let text: string | undefined;
    try {
      text = await stableJsonSliced(compact);
    } finally {
      clearInterval(counting);
    }
    expect(text).toBe(stableStringify(compact));
    expect(text!.length).toBeGreaterThan(1_000_000);
    // Made in one go, a timer could not run before it ended.
    expect(turns).toBeGreaterThan(0);
  });
});
