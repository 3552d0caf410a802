// A fast-check property over hostile names: a workspace made of names with any bytes (not UTF-8, 233-255
// bytes long) and, in some runs, a chain of folders past PATH_MAX, changed by one command captured by the
// workspace index (everything created, everything deleted, every file appended to). A rewind to before the
// command must give back the tree byte for byte, and its undo the tree after it. Runs: AGENT_TAPE_ROUNDS,
// 6 by default (each run is a few real commands, rewinds and undos); the soak tier runs 40 (rounds()). The seed is
// printed on failure by fast-check, and the shrunk case is a regression test to add.
import { execFileSync } from "node:child_process";
import { mkdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf, plantTree, type PlantedEntry } from "../helpers/byte-tree.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const RUNS = rounds(6, 40);

/** Bytes as a name: no NUL, no `/`, never `.` or `..`. */
const asName = (bytes: Uint8Array): Buffer => {
  const name = Buffer.from(bytes.map((b) => (b === 0 ? 0x80 : b === 0x2f ? 0xff : b)));
  return name.equals(Buffer.from(".")) || name.equals(Buffer.from(".."))
    ? Buffer.concat([name, Buffer.of(0xfe)])
    : name;
};
const nameOf = (min: number, max: number) => fc.uint8Array({ minLength: min, maxLength: max }).map(asName);
const hostileName = fc.oneof(
  { weight: 3, arbitrary: nameOf(1, 12) }, // mostly bytes that are not UTF-8
  { weight: 1, arbitrary: fc.stringMatching(/^[a-z]{1,8}(\.txt)?$/).map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: nameOf(233, 255) },
);
const content = fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b));

const entries = (depth: number): fc.Arbitrary<PlantedEntry[]> => {
  const file = fc.record({
    name: hostileName,
    kind: fc.constant("file" as const),
    content,
    mode: fc.constantFrom(0o644, 0o600, 0o755),
  });
  const link = fc.record({ name: hostileName, kind: fc.constant("link" as const), target: nameOf(1, 40) });
  const dir: fc.Arbitrary<PlantedEntry> =
    depth === 0
      ? file
      : fc.record({
          name: hostileName,
          kind: fc.constant("dir" as const),
          mode: fc.constantFrom(0o755, 0o700),
          entries: entries(depth - 1),
        });
  return fc.uniqueArray(fc.oneof(file, link, dir), { maxLength: 4, selector: (e) => e.name.toString("hex") });
};

/** 36-40 folders of 120 bytes (past 4,096 bytes), a file at the bottom. */
const deepChain: fc.Arbitrary<PlantedEntry> = fc
  .tuple(fc.array(nameOf(120, 120), { minLength: 36, maxLength: 40 }), content)
  .map(([names, bytes]) => {
    let inner: PlantedEntry[] = [{ name: Buffer.from("bottom"), kind: "file", content: bytes, mode: 0o644 }];
    for (const name of names.reverse()) inner = [{ name, kind: "dir", mode: 0o755, entries: inner }];
    return { ...inner[0]!, name: Buffer.from("deep") } as PlantedEntry;
  });

const tree = fc
  .tuple(entries(3), fc.option(deepChain, { freq: 3 }))
  .map(([top, deep]) => (deep === null || top.some((e) => e.name.equals(deep.name)) ? top : [...top, deep]));

type Change = "create" | "delete" | "append";
const DELETE_ALL = "find . -mindepth 1 -delete";
const APPEND_TO_FILES = `find . -type f -exec sh -c 'printf "\\377more" >> "$1"' _ {} \\;`;

it(`capture -> rewind -> undo gives back hostile names byte for byte, at any depth (${RUNS} runs)`, async () => {
  await fc.assert(
    fc.asyncProperty(tree, fc.constantFrom<Change>("create", "delete", "append"), async (planted, change) => {
      const base = await realpath(await tempDir("agent-tape-hostile-"));
      const workspace = join(base, "ws");
      await mkdir(workspace);
      const store = openStore({ root: join(base, "sessions") });
      try {
        const checkpoints = new CheckpointStore(store);
        const { id } = await store.create({ workspace });
        const sh = (script: string) => execFileSync("sh", ["-c", script], { cwd: workspace, stdio: "ignore" });
        if (change !== "create") plantTree(workspace, planted);
        await checkpoints.aroundCommand(id, { tool: "bash" }, () => sh("true"));
        const before = byteTreeOf(workspace);
        const target = (await store.get(id))!.lastSequence;
        await checkpoints.aroundCommand(id, { tool: "bash" }, () => {
          if (change === "create") plantTree(workspace, planted);
          else sh(change === "delete" ? DELETE_ALL : APPEND_TO_FILES);
          sh("touch MARKER"); // every command changes something: there is always a rewind to undo
        });
        const after = byteTreeOf(workspace);
        await rewind(store, id, { toSequence: target, mode: "files" });
        expect(byteTreeOf(workspace)).toEqual(before);
        await undoRewind(store, id);
        expect(byteTreeOf(workspace)).toEqual(after);
      } finally {
        await store.close();
      }
    }),
    { numRuns: RUNS },
  );
}, 600_000);
