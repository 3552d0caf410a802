// A fast-check model of shell commands: random shell-like operations (write, delete, rm -r of a
// folder, mkdir -p, mv, chmod, ln -s) grouped into commands run inside aroundCommand, with rewinds
// ("files" or "all") to random earlier points. The model is the tree copied at every sequence;
// after each rewind the workspace must equal the copy taken at its target. 40 runs walking the
// tree, 30 more with `watch: true` (docs/ARCHITECTURE.md, "Watched scans"), whose scans list only
// the folders inotify named.
import { chmod, mkdir, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { expect, it } from "vitest";
import { CheckpointStore, rewind } from "../../../src/index.js";
import { CONTENTS, FILES, FOLDERS, MODES } from "../../helpers/little-tree.js";
import { treeOf } from "../../helpers/workspace-tree.js";
import { rounds } from "../../helpers/rounds.js";
import { openStore, tempDir } from "../../helpers/fixture.js";

type Operation =
  | { kind: "write"; path: string; content: number; mode: number }
  | { kind: "delete"; path: string }
  | { kind: "rmdir"; folder: string }
  | { kind: "mkdir"; folder: string }
  | { kind: "mv"; from: string; to: string }
  | { kind: "chmod"; path: string; mode: number }
  | { kind: "link"; path: string; target: string };

// Folders made by mkdir that no file lives in: empty folders a rewind must also remove or bring back.
const EXTRA_FOLDERS = ["empty", "d/empty", "x/y"] as const;

const operation: fc.Arbitrary<Operation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("write" as const),
      path: fc.constantFrom(...FILES),
      content: fc.nat(CONTENTS.length - 1),
      mode: fc.constantFrom(...MODES),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete" as const), path: fc.constantFrom(...FILES) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("rmdir" as const), folder: fc.constantFrom(...FOLDERS) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("mkdir" as const), folder: fc.constantFrom(...EXTRA_FOLDERS) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("mv" as const),
      from: fc.constantFrom(...FILES),
      to: fc.constantFrom(...FILES),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("chmod" as const),
      path: fc.constantFrom(...FILES),
      mode: fc.constantFrom(...MODES),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("link" as const),
      path: fc.constantFrom(...FILES),
      target: fc.constantFrom("a.txt", "../outside", "d"),
    }),
  },
);

type Step = { kind: "command"; operations: Operation[] } | { kind: "rewind"; pick: number; mode: "files" | "all" };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("command" as const), operations: fc.array(operation, { maxLength: 5 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("rewind" as const),
      pick: fc.nat(),
      mode: fc.constantFrom("files" as const, "all" as const),
    }),
  },
);

/** One operation as a shell would do it; what cannot be done in the current tree is a no-op, like a failing command. */
async function apply(workspace: string, op: Operation): Promise<void> {
  const at = (path: string) => join(workspace, path);
  try {
    switch (op.kind) {
      case "write":
        await rm(at(op.path), { force: true });
        await mkdir(dirname(at(op.path)), { recursive: true });
        await writeFile(at(op.path), CONTENTS[op.content]!);
        await chmod(at(op.path), op.mode);
        return;
      case "delete":
        return await rm(at(op.path), { force: true });
      case "rmdir":
        return await rm(at(op.folder), { recursive: true, force: true });
      case "mkdir":
        return void (await mkdir(at(op.folder), { recursive: true }));
      case "mv":
        if (op.from === op.to) return;
        await mkdir(dirname(at(op.to)), { recursive: true });
        return await rename(at(op.from), at(op.to));
      case "chmod":
        return await chmod(at(op.path), op.mode);
      case "link":
        await rm(at(op.path), { force: true });
        await mkdir(dirname(at(op.path)), { recursive: true });
        return await symlink(op.target, at(op.path));
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A command fails as a shell's would; a link to itself (ELOOP) is one more way to fail.
    if (!["ENOENT", "ENOTDIR", "EISDIR", "EEXIST", "ELOOP"].includes(code ?? "")) throw error;
  }
}

// Inputs tried: 15 walked and 10 watched in `npm test`, 40 and 30 when soaking (test/helpers/rounds.ts).
const RUNS = { walked: rounds(15, 40), watched: rounds(10, 30) } as const;

for (const scans of ["walked", "watched"] as const)
  it(
    `random shell-like commands, captured by the workspace index (${scans}), rewind to the tree of any earlier point`,
    () => modelHolds(scans === "watched"),
    240_000,
  );

async function modelHolds(watch: boolean): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
      const base = await realpath(await tempDir("agent-tape-shell-model-"));
      const workspace = join(base, "ws");
      for (const file of FILES) await apply(workspace, { kind: "write", path: file, content: 2, mode: 0o644 });
      const store = openStore({ root: join(base, "sessions") });
      const checkpoints = new CheckpointStore(store, { workspaceIndex: { watch } });
      try {
        const { id } = await store.create({ workspace });
        await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
        const model = new Map<number, Record<string, string>>([[1, await treeOf(workspace)]]);
        const last = async () => (await store.get(id))!.lastSequence;
        for (const s of steps) {
          if (s.kind === "command") {
            await checkpoints.aroundCommand(id, { tool: "bash" }, async () => {
              for (const op of s.operations) await apply(workspace, op);
            });
            model.set(await last(), await treeOf(workspace));
            continue;
          }
          const points = [...model.keys()];
          const target = points[s.pick % points.length]!;
          await rewind(store, id, { toSequence: target, mode: s.mode });
          expect(await treeOf(workspace), `rewound (${s.mode}) to #${target}`).toEqual(model.get(target));
          if (s.mode === "all") for (const point of points) if (point > target) model.delete(point);
          model.set(await last(), await treeOf(workspace));
        }
      } finally {
        checkpoints.close();
        await store.close();
      }
    }),
    { numRuns: watch ? RUNS.watched : RUNS.walked },
  );
}
