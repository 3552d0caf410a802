// Names are bytes (docs/ARCHITECTURE.md, "Names and depths"): the string form of any byte string gives those
// bytes back, also through the tape's JSON, and a name that is valid UTF-8 is its plain string.
import fc from "fast-check";
import { expect, it } from "vitest";
import { bytesOfName, hasEscapedBytes, nameFromBytes, osPath } from "../../src/core/byte-names.js";
import { rounds } from "../helpers/rounds.js";

const RUNS = rounds(2000, 20000);

it(`any bytes -> name -> JSON -> bytes is exact (${RUNS} runs)`, () => {
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 255 }),
    // UTF-8 with bytes knocked out or inserted: truncated and overlong sequences, encoded surrogates
    fc
      .tuple(fc.string({ unit: "grapheme", maxLength: 40 }), fc.uint8Array({ maxLength: 4 }), fc.nat(40))
      .map(([text, noise, at]) => {
        const utf8 = Buffer.from(text);
        const cut = Math.min(at, utf8.length);
        return Buffer.concat([utf8.subarray(0, cut), noise, utf8.subarray(cut)]);
      }),
  );
  fc.assert(
    fc.property(bytes, (b) => {
      const name = nameFromBytes(b);
      expect(bytesOfName(name).equals(Buffer.from(b))).toBe(true);
      expect(bytesOfName(JSON.parse(JSON.stringify(name)) as string).equals(Buffer.from(b))).toBe(true);
      const valid = Buffer.from(Buffer.from(b).toString("utf8")).equals(Buffer.from(b));
      expect(hasEscapedBytes(name)).toBe(!valid);
      if (valid) expect(name).toBe(Buffer.from(b).toString("utf8"));
    }),
    { numRuns: RUNS },
  );
});

it(`a well-formed string is its own name and its own OS path (${RUNS} runs)`, () => {
  fc.assert(
    fc.property(fc.string({ unit: "grapheme", maxLength: 60 }), (text) => {
      expect(nameFromBytes(Buffer.from(text))).toBe(text);
      expect(osPath(text)).toBe(text);
    }),
    { numRuns: RUNS },
  );
});

it("the escapes: 0xFF is U+DCFF, an encoded surrogate is three escapes, U+FFFD itself stays", () => {
  expect(nameFromBytes(Buffer.from([0x62, 0xff]))).toBe("b\udcff");
  expect(nameFromBytes(Buffer.from([0xed, 0xa0, 0x80]))).toBe("\udced\udca0\udc80");
  expect(nameFromBytes(Buffer.from("a\ufffdb"))).toBe("a\ufffdb");
  expect(nameFromBytes(Buffer.from([0xf0, 0x9f, 0x98, 0x80, 0x80]))).toBe("\u{1f600}\udc80");
  expect(bytesOfName("\u{10080}")).toEqual(Buffer.from("\u{10080}")); // a pair whose low half is in the escape range
});
