import fc from "fast-check";
import { describe, expect, expectTypeOf, it } from "vitest";
import { definedFields, signalOf } from "../../src/core/defined-fields.js";

describe("definedFields", () => {
  it("keeps every field that is not undefined, with its value, and drops the undefined ones (generated)", () => {
    const value = fc.oneof(fc.constant(undefined), fc.constant(null), fc.integer(), fc.string(), fc.boolean());
    // Keys include "__proto__" and "constructor": each must stay a field of its own.
    const key = fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom("__proto__", "constructor"));
    fc.assert(
      fc.property(fc.dictionary(key, value), (fields) => {
        const kept = definedFields(fields);
        const expected = Object.entries(fields).filter(([, v]) => v !== undefined);
        expect(Object.entries(kept)).toEqual(expected);
        for (const v of Object.values(kept)) expect(v).not.toBeUndefined();
      }),
    );
  });

  it("types: a field that may be undefined becomes optional, the others stay required", () => {
    const options: { title?: string } = {};
    const kept = definedFields({ id: "s1", title: options.title });
    expectTypeOf(kept).toEqualTypeOf<{ id: string } & { title?: string }>();
    expect(kept).toEqual({ id: "s1" });
  });
});

describe("signalOf", () => {
  it("gives { signal } from a signal or from options carrying one, and {} without one", () => {
    const signal = new AbortController().signal;
    expect(signalOf(signal)).toEqual({ signal });
    expect(signalOf(signal).signal).toBe(signal);
    expect(signalOf({ signal }).signal).toBe(signal);
    expect(signalOf({ signal, other: 1 } as { signal: AbortSignal })).toStrictEqual({ signal });
    for (const without of [undefined, {}, { signal: undefined }]) expect(Object.keys(signalOf(without))).toEqual([]);
  });
});
