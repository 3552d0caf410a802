import { createHash } from "node:crypto";
import { chmod, mkdir, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { basename, join, relative } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CheckpointStore, type CheckpointEvent, type FileSnapshot } from "../../src/index.js";
import { CONTENTS, FILES, FOLDERS, MODES } from "../helpers/little-tree.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { allOwnerless } from "../helpers/ownerless.js";

const FOLDER_MODE = 0o755;

type Spelling = "plain" | "dot" | "absolute" | "doubled";
type Command =
  | { kind: "write"; path: string; content: number; mode: number }
  | { kind: "delete"; path: string }
  | { kind: "removeFolder"; path: string }
  | { kind: "capture"; targets: { path: string; spelling: Spelling }[] };

const command: fc.Arbitrary<Command> = fc.oneof(
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
    arbitrary: fc.record({ kind: fc.constant("removeFolder" as const), path: fc.constantFrom(...FOLDERS) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("capture" as const),
      targets: fc.array(
        fc.record({
          path: fc.constantFrom<string>(...FILES, ...FOLDERS, "."),
          spelling: fc.constantFrom<Spelling>("plain", "dot", "absolute", "doubled"),
        }),
        { minLength: 1, maxLength: 5 },
      ),
    }),
  },
);

/** What the workspace holds, as the test believes it: the model every checkpoint is held to. */
class WorkspaceModel {
  readonly files = new Map<string, { content: string; mode: number }>();
  readonly folders = new Set<string>(["."]);

  write(path: string, content: string, mode: number): string[] {
    const created: string[] = [];
    for (const folder of parentsOf(path)) {
      if (!this.folders.has(folder)) created.push(folder);
      this.folders.add(folder);
    }
    this.files.set(path, { content, mode });
    return created;
  }

  removeFolder(folder: string): void {
    for (const path of [...this.files.keys()]) if (isBelow(path, folder)) this.files.delete(path);
    for (const path of [...this.folders]) if (path === folder || isBelow(path, folder)) this.folders.delete(path);
  }

  /**
   * A tool that writes an absent path makes the folders above it on the way, so the capture records the highest
   * missing one absent too (a rewind then removes it with the file). Below a file nothing is missing: not a folder.
   */
  highestMissingFolder(target: string): FileSnapshot[] {
    for (const folder of parentsOf(target)) {
      if (this.folders.has(folder)) continue;
      if (this.files.has(folder)) return [];
      return [{ path: folder, kind: "absent" }];
    }
    return [];
  }

  /** The records a capture of `target` must make right now. */
  expected(target: string): FileSnapshot[] {
    const file = this.files.get(target);
    if (file) return [blobRecord(target, file.content, file.mode)];
    if (!this.folders.has(target)) return [{ path: target, kind: "absent" }, ...this.highestMissingFolder(target)];
    // A folder captured whole, and each folder below it, is a complete listing of what is below it.
    const records: FileSnapshot[] = [{ path: target, kind: "directory", mode: FOLDER_MODE, complete: true }];
    for (const folder of this.folders)
      if (isBelow(folder, target)) records.push({ path: folder, kind: "directory", mode: FOLDER_MODE, complete: true });
    for (const [path, f] of this.files) if (isBelow(path, target)) records.push(blobRecord(path, f.content, f.mode));
    return records;
  }
}

function parentsOf(path: string): string[] {
  const parts = path.split("/").slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

function isBelow(path: string, folder: string): boolean {
  return folder === "." ? path !== "." : path.startsWith(`${folder}/`);
}

const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");

function blobRecord(path: string, content: string, mode: number): FileSnapshot {
  return { path, kind: "blob", blob: sha256(content), bytes: Buffer.byteLength(content), mode };
}

function spell(workspace: string, path: string, spelling: Spelling): string {
  if (spelling === "dot") return `./${path}`;
  if (spelling === "absolute") return join(workspace, path);
  if (spelling === "doubled") return path.replaceAll("/", "//");
  return path;
}

/** Records by path, without owners (who runs the tests; the model does not know them: hard-links-owners tests them). */
function byPath(records: readonly FileSnapshot[]): Map<string, FileSnapshot> {
  return new Map(allOwnerless(records).map((r) => [r.path, r]));
}

/** Every file under `dir`, by its path relative to it. */
async function everyFileUnder(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { recursive: true, withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  return entries.filter((entry) => entry.isFile()).map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

describe("checkpoints against a model of the workspace", () => {
  it("records exactly what each path held at capture time, and every blob verifies", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 25 }), async (commands) => {
        const base = await realpath(await tempDir("agent-tape-property-"));
        const workspace = join(base, "ws");
        await mkdir(workspace);
        await chmod(workspace, FOLDER_MODE);
        const store = openStore({ root: join(base, "sessions"), durability: "none" });
        try {
          const checkpoints = new CheckpointStore(store);
          const { id } = await store.create({ workspace });
          const model = new WorkspaceModel();
          const promised: { sequence: number; files: Map<string, FileSnapshot> }[] = [];

          for (const step of commands) {
            if (step.kind === "write") {
              const content = CONTENTS[step.content]!;
              for (const folder of model.write(step.path, content, step.mode)) {
                await mkdir(join(workspace, folder));
                await chmod(join(workspace, folder), FOLDER_MODE);
              }
              await writeFile(join(workspace, step.path), content);
              await chmod(join(workspace, step.path), step.mode);
            } else if (step.kind === "delete") {
              model.files.delete(step.path);
              await rm(join(workspace, step.path), { force: true });
            } else if (step.kind === "removeFolder") {
              model.removeFolder(step.path);
              await rm(join(workspace, step.path), { recursive: true, force: true });
            } else {
              const event = await checkpoints.capture(id, {
                tool: "step",
                paths: step.targets.map((t) => spell(workspace, t.path, t.spelling)),
              });
              const expected = byPath(step.targets.flatMap((t) => model.expected(t.path)));
              const recorded = byPath(event!.payload.files);
              expect(event!.payload.files).toHaveLength(recorded.size); // one record per path
              expect(recorded).toEqual(expected);
              promised.push({ sequence: event!.sequence, files: expected });
            }
          }

          // What was promised at capture time is what is on disk now, and every blob it names reads back.
          const stored = (await store.readAll(id, { types: ["session_checkpoint"] })) as CheckpointEvent[];
          expect(stored.map((e) => ({ sequence: e.sequence, files: byPath(e.payload.files) }))).toEqual(promised);
          const referenced = new Set<string>();
          for (const { files } of promised) {
            for (const record of files.values()) {
              if (record.kind !== "blob") continue;
              referenced.add(record.blob);
              expect((await checkpoints.readBlob(id, record.blob)).length).toBe(record.bytes);
            }
          }
          // Small blobs live in the session's pack, larger ones in files of their own (docs/format.md, "Blob packs").
          const blobs = await store.backend.listBlobs(id);
          // A blob may be stored compressed: what the store reads back is what must hash to the name.
          for (const hash of blobs) expect(sha256(await checkpoints.readBlob(id, hash))).toBe(hash);
          expect(new Set(blobs)).toEqual(referenced);
          expect(blobs).toHaveLength(referenced.size); // dedupe: each distinct content stored once
          // Nothing else is left under blobs/: a file there is a referenced blob's, or the pack's.
          for (const file of await everyFileUnder(join(base, "sessions", id, "blobs")))
            expect(file.startsWith("pack/") || referenced.has(basename(file)), file).toBe(true);
        } finally {
          await store.close();
          await rm(base, { recursive: true, force: true });
        }
      }),
      { numRuns: rounds(25, 120) },
    );
  }, 120_000);
});
