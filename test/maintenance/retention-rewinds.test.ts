import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, applyRetention, isAgentTapeError, rewind, undoRewind, verify } from "../../src/index.js";
import { sha256 } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const DAY_MS = 24 * 60 * 60 * 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A session whose workspace holds a.txt, checkpointed without after-states; the lock released after each call. */
async function sessionWithWorkspace() {
  const base = await tempDir("agent-tape-retention-rewinds-");
  const workspace = join(base, "workspace");
  await mkdir(workspace);
  const store = openStore({ root: join(base, "root"), lockIdleMs: 0 });
  const checkpoints = new CheckpointStore(store, { afterState: false });
  const file = join(workspace, "a.txt");
  const id = (await store.create({ workspace })).id;
  return { store, checkpoints, file, id };
}

/**
 * 1 message, 2 checkpoint of a.txt (v1), a.txt = v2 (random bytes: only the rewind's undo snapshot holds them),
 * 3 rewind of "all" to 1 (a.txt back to v1; the checkpoint cut, kept in its archive), a.txt = v3,
 * [cutoff], 4 message, 5 checkpoint of a.txt (v3), a.txt = v4.
 */
async function story() {
  const { store, checkpoints, file, id } = await sessionWithWorkspace();
  await store.append(id, { type: "message", payload: { role: "user", content: "first" } });
  await writeFile(file, "v1");
  await checkpoints.capture(id, { tool: "edit", paths: ["a.txt"] });
  const v2 = randomBytes(1000);
  await writeFile(file, v2);
  const rewound = await rewind(store, id, { toSequence: 1 });
  await writeFile(file, "v3");
  await sleep(10);
  const cutoff = Date.now();
  await sleep(10);
  await store.append(id, { type: "message", payload: { role: "user", content: "second" } });
  await checkpoints.capture(id, { tool: "edit", paths: ["a.txt"] });
  await writeFile(file, "v4");
  return { store, id, file, v2: sha256(v2), marker: rewound.markerSequence!, now: new Date(cutoff + DAY_MS) };
}

describe('retention drops old rewind records like old checkpoints (docs/ARCHITECTURE.md, "Retention")', () => {
  it("frees the undo snapshot and the archive of a rewind before the cutoff; verify finds none missing", async () => {
    const { store, id, v2, marker, now } = await story();
    expect(await store.backend.readBlob(id, v2)).toBeDefined();
    expect(await store.backend.listRecords(id)).toContain(`rewind-archive-${marker}`);

    const report = await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now });
    expect(report.trimmed).toMatchObject([{ sessionId: id, horizon: marker, rewindsDropped: 1 }]);
    expect(report.trimmed[0]!.blobsDropped).toContain(v2);
    expect(report.trimmed[0]!.archivesDropped).toEqual([`rewind-archive-${marker}`]);
    expect(await store.backend.readBlob(id, v2)).toBeUndefined();
    expect(await store.backend.listRecords(id)).not.toContain(`rewind-archive-${marker}`);
    expect((await verify(store, id)).problems).toEqual([]);
    // The log is the conversation: nothing of it goes.
    expect((await store.readAll(id)).map((e) => e.type)).toEqual([
      "message",
      "session_rewind",
      "message",
      "session_checkpoint",
    ]);
    expect((await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now })).trimmed).toEqual([]);
  });

  it("a dry run counts what the real run frees: the rewind's archive as well as the blobs", async () => {
    const { store, now } = await story();
    const dry = await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now, dryRun: true });
    const real = await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now });
    expect(dry.trimmed[0]!.archivesDropped).toEqual(real.trimmed[0]!.archivesDropped);
    // The real run writes the horizon mark (a record of about 130 bytes) before it frees anything.
    expect(dry.trimmed[0]!.bytesFreed).toBeGreaterThanOrEqual(real.trimmed[0]!.bytesFreed!);
    expect(dry.trimmed[0]!.bytesFreed).toBeLessThan(real.trimmed[0]!.bytesFreed! + 200);
  });

  it("a rewind across the dropped record is refused whole; one after it still works", async () => {
    const { store, id, file, marker, now } = await story();
    await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now });
    const error = await rewind(store, id, { toSequence: 1, mode: "files" }).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "BEYOND_RETENTION_HORIZON"), String(error)).toBe(true);
    expect(await readFile(file, "utf8")).toBe("v4");
    await rewind(store, id, { toSequence: marker + 1 });
    expect(await readFile(file, "utf8")).toBe("v3");
  });

  it("the undo of a rewind behind the horizon is NOTHING_TO_UNDO, the workspace untouched", async () => {
    const { store, checkpoints, file, id } = await sessionWithWorkspace();
    await writeFile(file, "v1");
    const target = (await store.append(id, { type: "message", payload: { role: "user", content: "go" } })).sequence;
    await checkpoints.capture(id, { tool: "edit", paths: ["a.txt"] });
    await writeFile(file, "v2");
    await rewind(store, id, { toSequence: target, mode: "files" });
    await sleep(10);
    const report = await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now: new Date(Date.now() + DAY_MS) });
    expect(report.trimmed[0]).toMatchObject({ rewindsDropped: 1 });

    const error = await undoRewind(store, id).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "NOTHING_TO_UNDO"), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/retention/);
    expect(await readFile(file, "utf8")).toBe("v1");
  });
});
