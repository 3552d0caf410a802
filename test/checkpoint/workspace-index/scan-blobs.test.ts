// A workspace scan stores its blobs in batches (src/checkpoint/workspace-index/scan-blobs.ts): on the fs backend the
// small ones go into the session's pack, one append per batch, and the rest stay files of their own. What a
// rewind reads back from them, and what a failed batch leaves, are what these tests hold to.
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { readdir, realpath, writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import type { LockedSession, StorageBackend } from "../../../src/backend/types.js";
import { fsBackend } from "../../../src/backend/fs/fs-backend.js";
import { CheckpointStore, rewind, type SessionStore } from "../../../src/index.js";
import { openStore, tempDir } from "../../helpers/fixture.js";
import { treeOf } from "../../helpers/workspace-tree.js";

// More than one batch of the scan (512 blobs), so batches land while later files are read.
const SMALL_FILES = 700;
const LARGE_FILES = 5;

let base: string;
let workspace: string;
let root: string;

beforeEach(async () => {
  base = await realpath(await tempDir("agent-tape-scan-blobs-"));
  workspace = join(base, "ws");
  root = join(base, "sessions");
  for (let i = 0; i < SMALL_FILES; i++) {
    const dir = join(workspace, `pkg-${i % 7}`);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `f${i}.ts`), `export const value${i} = ${i};\n`.repeat(1 + (i % 40)));
  }
  // Incompressible and over 4 KiB: a file of its own whatever the pack takes.
  for (let i = 0; i < LARGE_FILES; i++) await writeFile(join(workspace, `big${i}.bin`), randomBytes(6000 + i));
});

async function sessionOn(backend: StorageBackend): Promise<{ store: SessionStore; id: string }> {
  const store = openStore({ backend });
  const id = (await store.create({ workspace })).id;
  await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
  return { store, id };
}

async function looseBlobFiles(id: string): Promise<number> {
  const blobs = join(root, id, "blobs");
  let count = 0;
  for (const shard of await readdir(blobs).catch(() => [] as string[]))
    if (/^[0-9a-f]{2}$/.test(shard)) count += (await readdir(join(blobs, shard))).length;
  return count;
}

async function packSegments(id: string): Promise<string[]> {
  return (await readdir(join(root, id, "blobs", "pack")).catch(() => [] as string[])).filter((n) =>
    n.endsWith(".pack"),
  );
}

/** The session's first scan, every file read and stored (a command that changes nothing). */
async function firstScan(store: SessionStore, id: string): Promise<void> {
  const checkpoints = new CheckpointStore(store);
  await checkpoints.afterCommand(await checkpoints.beforeCommand(id, { tool: "bash" }));
}

/** A shell command that rewrites, removes and adds files, run under aroundCommand; then a rewind before it. */
async function commandThenRewind(store: SessionStore, id: string): Promise<void> {
  const checkpoints = new CheckpointStore(store);
  const target = (await store.get(id))!.lastSequence;
  const before = await treeOf(workspace);
  await checkpoints.aroundCommand(id, { tool: "bash" }, async () =>
    execFileSync("sh", ["-c", "sed -i 's/value/changed/' pkg-*/f1*.ts && rm -rf pkg-3 big0.bin && echo new > n.txt"], {
      cwd: workspace,
    }),
  );
  expect(await treeOf(workspace)).not.toEqual(before);
  await rewind(store, id, { toSequence: target, mode: "files" });
  expect(await treeOf(workspace)).toEqual(before);
}

describe("a workspace scan's blobs", () => {
  it("small ones go into the session's pack by default, large ones are files; rewinds restore both", async () => {
    const { store, id } = await sessionOn(fsBackend({ root }));
    await firstScan(store, id);
    expect(await packSegments(id)).not.toEqual([]);
    expect(await looseBlobFiles(id)).toBe(LARGE_FILES);
    expect((await store.backend.listBlobs(id)).length).toBe(SMALL_FILES + LARGE_FILES);
    await commandThenRewind(store, id);
  });

  it("with packBlobsUnder: 0, every blob is a file of its own", async () => {
    const { store, id } = await sessionOn(fsBackend({ root, packBlobsUnder: 0 }));
    await firstScan(store, id);
    expect(await packSegments(id)).toEqual([]);
    expect(await looseBlobFiles(id)).toBe(SMALL_FILES + LARGE_FILES);
    await commandThenRewind(store, id);
  });

  it("a batch that fails stops the scan, and what the batches before it stored is deleted", async () => {
    const backend = fsBackend({ root });
    // The second batch fails as a full disk would fail it (the first has landed by then).
    const failing = failingSecondBatch(backend);
    const { store, id } = await sessionOn(failing);
    const before = (await backend.listBlobs(id)).sort();
    const error = await new CheckpointStore(store).beforeCommand(id, { tool: "bash" }).catch((e: unknown) => e);
    expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
    expect(failing.batches()).toBe(2);
    expect((await backend.listBlobs(id)).sort()).toEqual(before);
  });
});

/** The backend, whose locked sessions' second writeScanBlobs fails with ENOSPC before writing anything. */
function failingSecondBatch(backend: StorageBackend): StorageBackend & { batches(): number } {
  let batches = 0;
  const bound = <T extends object>(target: T, key: string | symbol, receiver: unknown) => {
    const value = Reflect.get(target, key, receiver) as unknown;
    return typeof value === "function" ? value.bind(target) : value;
  };
  const writeScanBlobsOf = (locked: LockedSession) => async (blobs: Iterable<readonly [string, Uint8Array]>) => {
    if (++batches === 2) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    return locked.writeScanBlobs!(blobs);
  };
  const lockOf =
    (target: StorageBackend) =>
    async (...args: Parameters<StorageBackend["lock"]>): Promise<LockedSession> => {
      const locked = await target.lock(...args);
      return new Proxy(locked, {
        get: (t, key, receiver) => (key === "writeScanBlobs" ? writeScanBlobsOf(t) : bound(t, key, receiver)),
      });
    };
  return new Proxy(backend, {
    get: (t, key, receiver) =>
      key === "lock" ? lockOf(t) : key === "batches" ? () => batches : bound(t, key, receiver),
  }) as StorageBackend & { batches(): number };
}
