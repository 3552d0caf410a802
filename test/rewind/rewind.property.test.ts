import { chmod, mkdir, realpath, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind } from "../../src/index.js";
import { fileEntry, workspaceTree } from "../helpers/rewind-workspace.js";
import { archivedEventsOf } from "../helpers/stored-events.js";
import { CONTENTS, FILES, FOLDERS, MODES } from "../helpers/little-tree.js";
import { referencedBlobs } from "../../src/blobs/references.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

type Operation =
  | { kind: "write"; path: string; content: number; mode: number }
  | { kind: "delete"; path: string }
  | { kind: "chmod"; path: string; mode: number }
  | { kind: "message"; text: string };

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
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("chmod" as const),
      path: fc.constantFrom(...FILES),
      mode: fc.constantFrom(...MODES),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("message" as const), text: fc.string({ maxLength: 20 }) }) },
);

/** Some history, then a rewind to a random point of the log as it is then, perhaps undone at once. */
interface Round {
  operations: Operation[];
  /** Picks the target among 0..last (modulo). */
  target: number;
  mode: "all" | "files";
  /**
   * 0 only for "all": a "files" rewind without its undo snapshot leaves the log unable to say what the
   * files were before it.
   */
  keepUndo: 0 | 1;
  undo: boolean;
}

const round: fc.Arbitrary<Round> = fc.oneof(
  fc.record({
    operations: fc.array(operation, { maxLength: 10 }),
    target: fc.nat(),
    mode: fc.constant("files" as const),
    keepUndo: fc.constant(1 as const),
    undo: fc.boolean(),
  }),
  fc.record({
    operations: fc.array(operation, { maxLength: 10 }),
    target: fc.nat(),
    mode: fc.constant("all" as const),
    keepUndo: fc.constantFrom(0 as const, 1 as const),
    undo: fc.boolean(),
  }),
);

/** The files as the test believes them to be: path → content and mode. */
type Files = ReadonlyMap<string, { content: string; mode: number }>;

/** The workspace tree the model predicts, in workspaceTree's terms. */
function treeOf(files: Files): Record<string, string> {
  const tree: Record<string, string> = {};
  for (const folder of FOLDERS) tree[folder] = "dir 755";
  for (const [path, file] of files) tree[path] = fileEntry(file.content, file.mode);
  return Object.fromEntries(Object.entries(tree).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * The log as a timeline: for every event in it, the files right after it happened. The state at a
 * target is that of the last event at or before it — what a rewind to the target must produce.
 */
class Timeline {
  readonly after = new Map<number, Files>();
  constructor(private readonly initial: Files) {}

  at(target: number): Files {
    let best = -1;
    for (const sequence of this.after.keys()) if (sequence <= target && sequence > best) best = sequence;
    return best === -1 ? this.initial : this.after.get(best)!;
  }

  get sequences(): number[] {
    return [...this.after.keys()].sort((a, b) => a - b);
  }

  get last(): number {
    return this.sequences.at(-1) ?? 0;
  }
}

describe("rewind against a model of the workspace's history", () => {
  it("puts the workspace back as at the target, keeps exactly the referenced blobs; undo brings it back", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(round, { minLength: 1, maxLength: 3 }), async (rounds) => {
        const base = await realpath(await tempDir("agent-tape-rewind-property-"));
        const workspace = join(base, "ws");
        for (const folder of FOLDERS) await mkdir(join(workspace, folder), { recursive: true });
        for (const folder of ["", ...FOLDERS]) await chmod(join(workspace, folder), 0o755);
        const store = openStore({ root: join(base, "sessions"), durability: "none" });
        try {
          const checkpoints = new CheckpointStore(store);
          const { id } = await store.create({ workspace });
          let files = new Map<string, { content: string; mode: number }>();
          const timeline = new Timeline(new Map());
          const file = (path: string) => join(workspace, path);

          /** Exactly the blobs that the log or a kept archive references are stored, each one intact. */
          const expectBlobsReferenced = async (where: string) => {
            const referenced = referencedBlobs(await store.readAll(id));
            for (const name of (await store.backend.listRecords(id)).filter((n) => n.startsWith("rewind-archive-"))) {
              referencedBlobs(await archivedEventsOf(store.backend, id, name), referenced);
            }
            expect(new Set(await store.backend.listBlobs(id)), where).toEqual(referenced);
            for (const hash of referenced) await checkpoints.readBlob(id, hash);
          };

          for (const [r, { operations, target: pick, mode, keepUndo, undo }] of rounds.entries()) {
            for (const op of operations) {
              if (op.kind === "message") {
                const event = await store.append(id, { type: "message", payload: { role: "user", content: op.text } });
                timeline.after.set(event.sequence, new Map(files));
                continue;
              }
              let sequence = 0;
              const run = async () => {
                if (op.kind === "write") {
                  await writeFile(file(op.path), CONTENTS[op.content]!);
                  await chmod(file(op.path), op.mode);
                  files.set(op.path, { content: CONTENTS[op.content]!, mode: op.mode });
                } else if (op.kind === "delete") {
                  await rm(file(op.path), { force: true });
                  files.delete(op.path);
                } else if (files.has(op.path)) {
                  await chmod(file(op.path), op.mode);
                  files.set(op.path, { ...files.get(op.path)!, mode: op.mode });
                }
              };
              await checkpoints.around(id, { tool: op.kind, paths: [op.path] }, run);
              // around appends the checkpoint, then the after-state: rewinding to either leaves the tool's result.
              sequence = (await store.get(id))!.lastSequence;
              timeline.after.set(sequence - 1, new Map(files));
              timeline.after.set(sequence, new Map(files));
            }

            const last = timeline.last;
            // Only sequences on the tape are targets (a cut or re-appended one is SEQUENCE_NOT_ON_TAPE).
            const onTape = [0, ...timeline.sequences];
            const target = onTape[pick % onTape.length]!;
            const where = `round ${r}: rewind (${mode}, keepUndo ${keepUndo}) to ${target} of 0..${last}`;
            const wanted = timeline.at(target);
            const beforeRewind = new Map(files);
            const report = await rewind(store, id, { toSequence: target, mode, keepUndo });

            expect(await workspaceTree(workspace), where).toEqual(treeOf(wanted));
            if (target === last) {
              expect(report.markerSequence, where).toBeUndefined();
              continue;
            }
            const marker = last + 1;
            expect(report.markerSequence, where).toBe(marker);
            const removed = mode === "all" ? timeline.sequences.filter((s) => s > target) : [];
            const removedStates = removed.map((s) => timeline.after.get(s)!);
            for (const s of removed) timeline.after.delete(s);
            timeline.after.set(marker, wanted);
            files = new Map(wanted);
            expect(
              (await store.readAll(id)).map((e) => e.sequence),
              where,
            ).toEqual(timeline.sequences);
            await expectBlobsReferenced(where);
            if (!undo || keepUndo === 0) continue;

            const undone = await undoRewind(store, id);

            expect(await workspaceTree(workspace), `${where}, undone`).toEqual(treeOf(beforeRewind));
            removedStates.forEach((state, i) => {
              timeline.after.set(marker + 1 + i, state);
            });
            timeline.after.set(marker + removed.length + 1, beforeRewind);
            expect(undone.markerSequence, `${where}, undone`).toBe(marker + removed.length + 1);
            expect(
              (await store.readAll(id)).map((e) => e.sequence),
              `${where}, undone`,
            ).toEqual(timeline.sequences);
            await expectBlobsReferenced(`${where}, undone`);
            files = new Map(beforeRewind);
          }
        } finally {
          await store.close();
          await rm(base, { recursive: true, force: true });
        }
      }),
      { numRuns: rounds(20, 120) },
    );
  }, 240_000);
});
