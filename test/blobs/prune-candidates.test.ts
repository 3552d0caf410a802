// A prune given a few candidates (a rewind's) asks each holder of references in turn and stops once every
// candidate is known to be kept (docs/ARCHITECTURE.md, "Blobs"): whichever holder names a blob, it is kept;
// only one that no holder names, and that is on disk, is pruned.
import { createHash } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import type { SessionStore } from "../../src/index.js";
import { findUnreferencedBlobs } from "../../src/blobs/prune.js";
import { archiveName } from "../../src/blobs/archives.js";
import { registerReferenceRoot } from "../../src/blobs/reference-roots.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { openStore, tempDir } from "../helpers/fixture.js";

let store: SessionStore;
let sessionId: string;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const blob = (name: string) => ({ name, hash: sha256(name) });
const checkpointOf = (...hashes: string[]) => ({
  type: "session_checkpoint" as const,
  payload: {
    tool: "edit",
    workspace: "/nowhere",
    files: hashes.map((hash, i) => ({ path: `f${i}`, kind: "blob" as const, blob: hash, bytes: 1, mode: 0o644 })),
  },
});

/** An event as a rewind archives it: cut from the log, so with a sequence of its own (here past the end). */
function archived(hash: string, sequence: number) {
  return { ...lockedAccess(store).eventFor(sessionId, checkpointOf(hash)), sequence };
}

// A root of this file's own, naming one blob of one session, as the workspace index names its files' blobs.
const rooted = new Map<string, string[]>();
registerReferenceRoot(async (_backend, id) => rooted.get(id) ?? []);

beforeEach(async () => {
  store = openStore({ root: await tempDir("agent-tape-prune-") });
  sessionId = (await store.create()).id;
});

describe("which of a few candidate blobs nothing references", () => {
  const appended = blob("named by the event about to be appended");
  const inRoot = blob("named by a reference root");
  const early = blob("named by the first checkpoint");
  const late = blob("named by the last checkpoint");
  const archivedBlob = blob("named by a kept archive");
  const inDropped = blob("named only by an archive being dropped");
  const orphan = blob("named by nothing");
  const gone = blob("named by nothing and not on disk");
  const all = [appended, inRoot, early, late, archivedBlob, inDropped, orphan];

  it("keeps every candidate some holder names, and returns the rest that are on disk", async () => {
    rooted.set(sessionId, [inRoot.hash]);
    await store.append(sessionId, checkpointOf(early.hash));
    for (let k = 0; k < 50; k++)
      await store.append(sessionId, { type: "message", payload: { role: "user", content: "x" } });
    await store.append(sessionId, checkpointOf(late.hash));
    const found = await lockedAccess(store).withLockedSession(sessionId, async (locked) => {
      for (const { name, hash } of all) await locked.writeBlob(hash, Buffer.from(name));
      await locked.writeRecord(archiveName(900), {
        markerSequence: 900,
        events: [archived(archivedBlob.hash, 800)],
      });
      await locked.writeRecord(archiveName(901), {
        markerSequence: 901,
        events: [archived(inDropped.hash, 801)],
      });
      return findUnreferencedBlobs(store.backend, sessionId, {
        alsoKeep: [lockedAccess(store).eventFor(sessionId, checkpointOf(appended.hash))],
        ignoreArchives: [archiveName(901)],
        candidates: [...all, gone].map((b) => b.hash),
        exists: (hash) => locked.hasBlob(hash),
      });
    });
    expect(found.sort()).toEqual([inDropped.hash, orphan.hash].sort());
  });

  it("a candidate each holder keeps is kept whichever holder it is, alone or with the others", async () => {
    rooted.set(sessionId, [inRoot.hash]);
    await store.append(sessionId, checkpointOf(early.hash));
    await store.append(sessionId, checkpointOf(late.hash));
    await lockedAccess(store).withLockedSession(sessionId, async (locked) => {
      for (const { name, hash } of all) await locked.writeBlob(hash, Buffer.from(name));
      await locked.writeRecord(archiveName(900), {
        markerSequence: 900,
        events: [archived(archivedBlob.hash, 800)],
      });
      for (const kept of [appended, inRoot, early, late, archivedBlob]) {
        const found = await findUnreferencedBlobs(store.backend, sessionId, {
          alsoKeep: [lockedAccess(store).eventFor(sessionId, checkpointOf(appended.hash))],
          candidates: [kept.hash],
          exists: (hash) => locked.hasBlob(hash),
        });
        expect(found, kept.name).toEqual([]);
        const withOrphan = await findUnreferencedBlobs(store.backend, sessionId, {
          alsoKeep: [lockedAccess(store).eventFor(sessionId, checkpointOf(appended.hash))],
          candidates: [kept.hash, orphan.hash],
          exists: (hash) => locked.hasBlob(hash),
        });
        expect(withOrphan, kept.name).toEqual([orphan.hash]);
      }
    });
  });
});
