// A report without patches counts lines with line-changes.ts instead of jsdiff's patch (docs/ARCHITECTURE.md,
// "Diffs"): on any pair of texts, at any edit bound, the counts must be the ones jsdiff's patch shows, and it
// must give up exactly where jsdiff does.
import fc from "fast-check";
import { structuredPatch } from "diff";
import { describe, expect, it } from "vitest";
import { countLineChanges } from "../../src/core/line-changes.js";
import { diffFile } from "../../src/core/file-diff.js";
import { rounds } from "../helpers/rounds.js";

/** What diffFile counted before: the `+` and `-` lines of jsdiff's patch, or undefined when it gave up. */
function jsdiffCounts(oldText: string, newText: string, maxEditLength: number) {
  const patch = structuredPatch("a", "b", oldText, newText, undefined, undefined, { context: 3, maxEditLength });
  if (!patch) return undefined;
  let insertions = 0;
  let deletions = 0;
  for (const hunk of patch.hunks)
    for (const line of hunk.lines) {
      if (line.startsWith("+")) insertions++;
      else if (line.startsWith("-")) deletions++;
    }
  return { insertions, deletions };
}

// Few distinct lines, so that texts share many of them in many orders (the searches' ties), with the line
// endings jsdiff tells apart: `\n`, `\r\n`, a lone `\r` inside a line, and no newline at the end.
const line = fc.constantFrom("a", "b", "c", "", " a", "a\r", "+x", "-y", "\\z");
const ending = fc.constantFrom("\n", "\n", "\n", "\r\n");
const text = fc
  .tuple(fc.array(fc.tuple(line, ending), { maxLength: 30 }), fc.option(line, { nil: undefined }))
  .map(([lines, last]) => lines.map(([l, e]) => l + e).join("") + (last ?? ""));
// One text and an edit of it: most real pairs share most of their lines.
const edited = text.chain((before) =>
  fc.array(fc.tuple(fc.nat(40), fc.nat(2), line), { maxLength: 6 }).map((edits) => {
    const lines = before.split(/(?<=\n)/);
    for (const [at, kind, value] of edits) {
      const i = at % (lines.length + 1);
      if (kind === 0) lines.splice(i, 0, `${value}\n`);
      else if (kind === 1) lines.splice(i, 1);
      else lines[i] = `${value}\n`;
    }
    return [before, lines.join("")] as const;
  }),
);

describe("line changes counted without a patch", () => {
  it("are jsdiff's counts for any two texts, at any edit bound", () => {
    fc.assert(
      fc.property(fc.oneof(fc.tuple(text, text), edited), fc.nat(70), ([before, after], bound) => {
        expect(countLineChanges(before, after, bound)).toEqual(jsdiffCounts(before, after, bound));
      }),
      { numRuns: rounds(3000, 30_000) },
    );
  });

  it("are what diffFile reports with and without the patch", () => {
    fc.assert(
      fc.property(fc.oneof(fc.tuple(text, text), edited), ([before, after]) => {
        const limits = { maxBytes: 1 << 20, maxLines: 1000, maxEditLength: 8, maxTotalBytes: 1 << 24 };
        const counted = diffFile("f", Buffer.from(before), Buffer.from(after), { limits });
        const patched = diffFile("f", Buffer.from(before), Buffer.from(after), { limits, patch: true });
        expect(counted.diff).toEqual(patched.diff);
      }),
      { numRuns: 1000 },
    );
  });
});
