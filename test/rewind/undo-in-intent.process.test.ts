// A rewind of a few small files carries the undo snapshot's bytes inside its intent (one fsynced write) and
// stores them as blobs with the files (src/rewind/undo-in-intent.ts). Killed (SIGKILL, 1 round per
// case) at each step boundary, the session must still end fully rewound and its undo must still bring every
// file back byte for byte; also when the blobs written without their own fsync were lost to a power loss
// (simulated: emptied), and an intent whose carried bytes do not match their names is refused.
import { readFile, realpath, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect } from "vitest";
import { CheckpointStore, isAgentTapeError, undoRewind } from "../../src/index.js";
import { Child } from "../helpers/children.js";
import { put, sha256, workspaceTree } from "../helpers/rewind-workspace.js";
import { it, openStore, type TempDir } from "../helpers/fixture.js";
import { blobIsStored, damageBlob } from "../helpers/blob-files.js";

interface Small {
  root: string;
  workspace: string;
  id: string;
  target: number;
  treeBefore: Record<string, string>;
  treeAtTarget: Record<string, string>;
  /** The current bytes the rewind's undo snapshot holds: a2, b2, new.txt's. */
  undoHashes: string[];
}

/** a.txt and sub/b.txt edited, gone.txt deleted, new.txt made by one tool call after the target. */
async function smallSession(tempDir: TempDir): Promise<Small> {
  const base = await realpath(await tempDir("agent-tape-undo-in-intent-"));
  const workspace = join(base, "ws");
  const root = join(base, "sessions");
  await put(workspace, "a.txt", "a1\n");
  await put(workspace, "sub/b.txt", "b1\n", 0o600);
  await put(workspace, "gone.txt", "g1\n");
  const store = openStore({ root });
  try {
    const checkpoints = new CheckpointStore(store);
    const { id } = await store.create({ workspace });
    const target = (await store.append(id, { type: "message", payload: { role: "user", content: "edit" } })).sequence;
    const treeAtTarget = await workspaceTree(workspace);
    await checkpoints.around(id, { tool: "edit", paths: ["a.txt", "sub/b.txt", "gone.txt", "new.txt"] }, async () => {
      await put(workspace, "a.txt", "a2\n");
      await put(workspace, "sub/b.txt", "b2\n", 0o600);
      await rm(join(workspace, "gone.txt"));
      await put(workspace, "new.txt", "new\n");
    });
    await store.append(id, { type: "message", payload: { role: "assistant", content: "done" } });
    const treeBefore = await workspaceTree(workspace);
    return {
      root,
      workspace,
      id,
      target,
      treeBefore,
      treeAtTarget,
      undoHashes: ["a2\n", "b2\n", "new\n"].map((text) => sha256(text)),
    };
  } finally {
    await store.close();
  }
}

/** Runs a rewind in a child that freezes at `step`, then kills it there. */
async function rewindKilledAt(s: Small, step: string): Promise<void> {
  const child = new Child("rewind-until.ts", [s.root, s.id, s.workspace, "rewind", String(s.target), step, "1"]);
  await child.waitForLine((line) => line === step);
  child.kill("SIGKILL");
  expect((await child.done()).signal).toBe("SIGKILL");
}

const intentFile = (s: Small) => join(s.root, s.id, "records", "rewind-intent.json");
const exists = (path: string) =>
  readFile(path).then(
    () => true,
    () => false,
  );

/** Takes the session's lock (recovery runs), then undoes the rewind: both trees must be exact. */
async function expectRewoundThenUndone(s: Small): Promise<void> {
  const store = openStore({ root: s.root });
  try {
    await store.withLock(s.id, async () => undefined);
    expect(await exists(intentFile(s))).toBe(false);
    expect(await workspaceTree(s.workspace)).toEqual(s.treeAtTarget);
    await undoRewind(store, s.id);
    expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
  } finally {
    await store.close();
  }
}

const TIMEOUT = 60_000;

describe("undo bytes carried by the intent (a rewind of a few small files)", () => {
  it(
    "the intent holds them, and no blob of them is stored before it",
    async ({ tempDir }) => {
      const s = await smallSession(tempDir);
      await rewindKilledAt(s, "intent-written");
      const intent = JSON.parse(await readFile(intentFile(s), "utf8")) as { undoBlobs?: { hash: string }[] };
      expect(intent.undoBlobs?.map((b) => b.hash).sort()).toEqual([...s.undoHashes].sort());
      for (const hash of s.undoHashes) expect(await blobIsStored(s.root, s.id, hash)).toBe(false);
      await expectRewoundThenUndone(s);
    },
    TIMEOUT,
  );

  for (const step of ["files-restored", "log-truncated", "blobs-pruned", "marker-appended"])
    it(
      `killed after ${step}: opening it finishes the rewind, and the undo gives every file back`,
      async ({ tempDir }) => {
        const s = await smallSession(tempDir);
        await rewindKilledAt(s, step);
        await expectRewoundThenUndone(s);
      },
      TIMEOUT,
    );

  it(
    "blobs written with the files but lost to a power loss (emptied) are written again from the intent",
    async ({ tempDir }) => {
      const s = await smallSession(tempDir);
      await rewindKilledAt(s, "files-restored");
      for (const hash of s.undoHashes) await damageBlob(s.root, s.id, hash, "");
      await expectRewoundThenUndone(s);
    },
    TIMEOUT,
  );

  it(
    "an intent whose carried bytes do not match their name is STORE_TAMPERED, and no file changes",
    async ({ tempDir }) => {
      const s = await smallSession(tempDir);
      await rewindKilledAt(s, "intent-written");
      const intent = JSON.parse(await readFile(intentFile(s), "utf8")) as { undoBlobs: { base64: string }[] };
      intent.undoBlobs[0]!.base64 = Buffer.from("not what it was\n").toString("base64");
      await writeFile(intentFile(s), JSON.stringify(intent));
      const store = openStore({ root: s.root });
      try {
        const error = await store
          .withLock(s.id, async () => undefined)
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(isAgentTapeError(error, "STORE_TAMPERED"), String(error)).toBe(true);
        expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
      } finally {
        await store.close();
      }
    },
    TIMEOUT,
  );
});
