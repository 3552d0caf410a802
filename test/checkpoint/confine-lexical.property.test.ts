// Placing a path in the workspace without touching the disk (docs/ARCHITECTURE.md, "Batched file work"): a plain
// relative path skips node:path's resolving, and gives what resolving gives for any path, however it is spelled.
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import fc from "fast-check";
import { expect, it } from "vitest";
import { inWorkspace, isPlainRelative, placeLexically } from "../../src/checkpoint/confine.js";
import { rounds } from "../helpers/rounds.js";

const RUNS = rounds(3000, 30000);

/** What node:path makes of `path` in `root` (the definition the fast path must match). */
function byNodePath(root: string, given: string, path: string) {
  if (path.includes("\0")) return { inside: false, path };
  const bases = isAbsolute(path) && given !== root ? [root, resolve(given)] : [root];
  for (const base of bases) {
    const rel = relative(base, resolve(base, path));
    if (rel === "") return { inside: true, path: ".", absolute: root };
    if (!isAbsolute(rel) && rel !== ".." && !rel.startsWith(".." + sep))
      return { inside: true, path: rel, absolute: join(root, rel) };
  }
  return { inside: false, path };
}

// Names and separators a hostile or careless caller writes: dots of every count, doubled and trailing slashes,
// NUL, backslashes, spaces, non-ASCII, a lone surrogate escape (a byte that is not UTF-8).
const piece = fc.constantFrom(
  "a",
  "src",
  ".",
  "..",
  "...",
  ".a",
  "a.",
  "..a",
  "",
  " ",
  "\0",
  "\\",
  "é",
  "\udcff",
  "node_modules",
);
const path = fc.oneof(
  fc.array(piece, { maxLength: 7 }).map((parts) => parts.join("/")),
  fc
    .tuple(fc.constantFrom("/", "//", "./", "../"), fc.array(piece, { maxLength: 5 }))
    .map(([lead, parts]) => lead + parts.join("/")),
  fc.string({ unit: fc.constantFrom("a", ".", "/", "\0", "b"), maxLength: 16 }),
);
const root = fc.constantFrom("/", "/ws", "/w s/deep/er", "/ws/é");

it(`a path placed lexically is what node:path resolves it to, plain or not (${RUNS} runs)`, () => {
  fc.assert(
    fc.property(root, path, (workspace, p) => {
      const expected = byNodePath(workspace, workspace, p);
      expect(placeLexically(workspace, p, workspace)).toEqual(expected);
      if (isPlainRelative(p)) {
        expect(expected).toEqual({ inside: true, path: p, absolute: join(workspace, p) });
        expect(inWorkspace(workspace, p)).toBe(join(workspace, p));
      }
    }),
    { numRuns: RUNS },
  );
});

it("plain relative paths are recognised, and every other spelling is left to node:path", () => {
  for (const p of ["a", "a/b", "src/deep/file.ts", "...", ".a/..b/c.", "é/\udcff"])
    expect(isPlainRelative(p)).toBe(true);
  for (const p of ["", ".", "..", "./a", "a/.", "a/..", "../a", "a//b", "a/", "/a", "a\0b", "a/./b"])
    expect(isPlainRelative(p)).toBe(false);
  expect(inWorkspace("/", "a/b")).toBe("/a/b");
  expect(inWorkspace("/ws", "")).toBe("/ws");
});
