import { beforeEach, describe, expect, it } from "vitest";
import type { LockedSession, StorageBackend } from "../backend/types.js";
import { isAgentTapeError } from "../index.js";
import { blob, event, expectCode, readAll, record, sha256, withLock } from "./fixtures.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea, type ConformanceSuite } from "./suite.js";

/** Blobs: content-addressed bytes per session, names checked, nothing reached outside the session. */
export const blobsArea: ConformanceArea = (suite) => {
  describe("blobs", () => {
    blobWritesAndReads(suite);
    manyAtOnce(suite);
    blobDeletesAndOwners(suite);
  });
};

/** Registers (with vitest) the blobs area of the conformance suite alone; `runBackendConformance` runs every area. */
export function runBlobConformance(options: BackendConformanceOptions): void {
  runAreas(options, [blobsArea]);
}

/** Blobs written, read back, and names that are no hash refused. */
function blobWritesAndReads(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });
  it("writeBlob stores bytes under their hash: readBlob, hasBlob and listBlobs see them", async () => {
    const a = blob("file contents\n");
    const empty = blob("");
    const binary = { hash: sha256(Buffer.from([0, 255, 10, 13, 0])), bytes: Uint8Array.from([0, 255, 10, 13, 0]) };
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", async (locked) => {
      expect(await locked.hasBlob(a.hash)).toBe(false);
      for (const x of [a, empty, binary]) expect(await locked.writeBlob(x.hash, x.bytes)).toBe(true);
      expect(await locked.hasBlob(a.hash)).toBe(true);
      expect(await locked.hasBlob(empty.hash)).toBe(true);
    });
    expect(await backend.readBlob("s1", a.hash)).toEqual(Buffer.from(a.bytes));
    expect(await backend.readBlob("s1", empty.hash)).toEqual(Buffer.alloc(0));
    expect(await backend.readBlob("s1", binary.hash)).toEqual(Buffer.from(binary.bytes));
    expect((await backend.listBlobs("s1")).sort()).toEqual([a.hash, empty.hash, binary.hash].sort());
  });

  it("writeBlob of a hash already stored writes nothing and returns false", async () => {
    const a = blob("first bytes");
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", async (locked) => {
      expect(await locked.writeBlob(a.hash, a.bytes)).toBe(true);
      expect(await locked.writeBlob(a.hash, a.bytes)).toBe(false);
      // Content addressing: the name promises the bytes, so the stored ones are kept.
      expect(await locked.writeBlob(a.hash, Buffer.from("other bytes"))).toBe(false);
    });
    expect(await backend.readBlob("s1", a.hash)).toEqual(Buffer.from(a.bytes));
    expect(await backend.listBlobs("s1")).toEqual([a.hash]);
  });

  it("readBlob of an absent blob, or of a name that is no hash, is undefined", async () => {
    await backend.createSession(record("s1"));
    expect(await backend.readBlob("s1", blob("absent").hash)).toBeUndefined();
    expect(await backend.readBlob("s1", "not-a-hash")).toBeUndefined();
    expect(await backend.readBlob("s1", "../session.json")).toBeUndefined();
  });

  it("writeBlob refuses a name that is not a lowercase hex sha256 with INVALID_ARGUMENT", async () => {
    await backend.createSession(record("s1"));
    const upper = blob("x").hash.toUpperCase();
    await withLock(backend, "s1", async (locked) => {
      for (const name of ["../../../escape", "abc", upper, `${blob("x").hash}0`]) {
        await expectCode(locked.writeBlob(name, Buffer.from("x")), "INVALID_ARGUMENT");
      }
      expect(await locked.hasBlob("../../../escape")).toBe(false);
    });
    expect(await backend.listBlobs("s1")).toEqual([]);
  });

  it("deleteBlob of a name that is not a hash deletes nothing, not even another session's files", async () => {
    await backend.createSession(record("s1"));
    await backend.createSession(record("s2", "victim"), [event("s2", 1)]);
    await withLock(backend, "s1", async (locked) => {
      for (const name of ["../s2/events.jsonl", "../s2/session.json", "../../s2/events.jsonl", "..", "../s2"]) {
        // Refusing the name and ignoring it are both fine; following it is not.
        await locked
          .deleteBlob(name)
          .catch((error: unknown) => expect(isAgentTapeError(error, "INVALID_ARGUMENT")).toBe(true));
      }
    });
    expect(await backend.getSession("s2")).toEqual(record("s2", "victim"));
    expect(await readAll(backend, "s2")).toEqual([event("s2", 1)]);
  });
}

/** Blobs deleted, kept from the caller's buffers, and kept per session. */
function blobDeletesAndOwners(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });
  it("deleteBlob removes a blob, and deleting an absent one is not an error", async () => {
    const [a, b] = [blob("keep"), blob("drop")];
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", async (locked) => {
      await locked.writeBlob(a.hash, a.bytes);
      await locked.writeBlob(b.hash, b.bytes);
      await locked.deleteBlob(b.hash);
      await locked.deleteBlob(b.hash);
      await locked.deleteBlob(blob("never").hash);
      expect(await locked.hasBlob(b.hash)).toBe(false);
      expect(await locked.hasBlob(a.hash)).toBe(true);
      // Deleted means writable again.
      expect(await locked.writeBlob(b.hash, b.bytes)).toBe(true);
      await locked.deleteBlob(b.hash);
    });
    expect(await backend.readBlob("s1", b.hash)).toBeUndefined();
    expect(await backend.listBlobs("s1")).toEqual([a.hash]);
  });

  it("stored blob bytes do not change when the caller reuses its buffers", async () => {
    const bytes = Buffer.from("snapshot");
    const hash = sha256(bytes);
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", (locked) => locked.writeBlob(hash, bytes));
    bytes.fill(0);
    const read = await backend.readBlob("s1", hash);
    read?.fill(1);
    expect(await backend.readBlob("s1", hash)).toEqual(Buffer.from("snapshot"));
  });

  suite.withOptional(
    "writeBlobs",
    "writeBlobs stores each blob as writeBlob would, returns those it wrote, and is all or nothing",
    async () => {
      const [a, b, empty] = [blob("already there"), blob("new one"), blob("")];
      await backend.createSession(record("s1"));
      await withLock(backend, "s1", async (locked) => {
        await locked.writeBlob(a.hash, a.bytes);
        const written = await locked.writeBlobs!(new Map([a, b, empty].map((x) => [x.hash, x.bytes])));
        expect(written.sort()).toEqual([b.hash, empty.hash].sort());
        await expectBatchWithBadNameWritesNothing(locked, (blobs) => locked.writeBlobs!(blobs));
      });
      for (const x of [a, b, empty]) expect(await backend.readBlob("s1", x.hash)).toEqual(Buffer.from(x.bytes));
      expect((await backend.listBlobs("s1")).sort()).toEqual([a.hash, b.hash, empty.hash].sort());
    },
  );

  it("blobs belong to one session", async () => {
    const a = blob("mine");
    await backend.createSession(record("s1"));
    await backend.createSession(record("s2"));
    await withLock(backend, "s1", (locked) => locked.writeBlob(a.hash, a.bytes));
    expect(await backend.readBlob("s2", a.hash)).toBeUndefined();
    expect(await backend.listBlobs("s2")).toEqual([]);
    await withLock(backend, "s2", async (locked) => expect(await locked.hasBlob(a.hash)).toBe(false));
  });
}

/**
 * Blobs many at once, each optional: a workspace scan's written together (a backend may keep small ones apart, as
 * in a pack), and a prune's deleted together.
 */
function manyAtOnce(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  suite.withOptional(
    "writeScanBlobs",
    "writeScanBlobs stores each blob as writeBlob would, returns those it wrote, and is all or nothing",
    async () => {
      // Small and larger, the same twice, and one already stored: a backend may keep small ones apart (a pack).
      const [a, b, empty, big] = [blob("already there"), blob("new one"), blob(""), blob("x".repeat(70_000))];
      const many = Array.from({ length: 40 }, (_, i) => blob(`file ${i}\n`.repeat(i + 1)));
      await backend.createSession(record("s1"));
      await withLock(backend, "s1", async (locked) => {
        await locked.writeBlob(a.hash, a.bytes);
        const all = [a, b, empty, big, b, ...many];
        const written = await locked.writeScanBlobs!(all.map((x) => [x.hash, x.bytes] as const));
        expect(written.sort()).toEqual([b, empty, big, ...many].map((x) => x.hash).sort());
        expect(await locked.writeScanBlobs!([[b.hash, b.bytes]])).toEqual([]);
        await locked.syncBlobs?.(written);
        await expectBatchWithBadNameWritesNothing(locked, (blobs) => locked.writeScanBlobs!(blobs));
        await locked.deleteBlob(many[0]!.hash);
      });
      const kept = [a, b, empty, big, ...many.slice(1)];
      for (const x of kept) expect(await backend.readBlob("s1", x.hash)).toEqual(Buffer.from(x.bytes));
      expect(await backend.readBlob("s1", many[0]!.hash)).toBeUndefined();
      expect((await backend.listBlobs("s1")).sort()).toEqual(kept.map((x) => x.hash).sort());
    },
  );

  suite.withOptional(
    "deleteBlobs",
    "deleteBlobs deletes each blob named as deleteBlob would, whether stored alone or many at once",
    async () => {
      const [a, b, c] = [blob("kept"), blob("deleted alone"), blob("x".repeat(70_000))];
      const many = Array.from({ length: 40 }, (_, i) => blob(`scan file ${i}\n`.repeat(i + 1)));
      await backend.createSession(record("s1"));
      await withLock(backend, "s1", async (locked) => {
        for (const x of [a, b, c]) await locked.writeBlob(x.hash, x.bytes);
        if (locked.writeScanBlobs) await locked.writeScanBlobs(many.map((x) => [x.hash, x.bytes] as const));
        else for (const x of many) await locked.writeBlob(x.hash, x.bytes);
        await locked.syncBlobs?.(many.map((x) => x.hash));
        const named = [b, c, ...many.slice(1)].map((x) => x.hash);
        await locked.deleteBlobs!([...named, named[0]!, blob("never").hash, "not-a-hash"]);
        for (const hash of named) expect(await locked.hasBlob(hash)).toBe(false);
        expect(await locked.writeBlob(b.hash, b.bytes)).toBe(true); // deleted means writable again
      });
      for (const x of [a, b, many[0]!]) expect(await backend.readBlob("s1", x.hash)).toEqual(Buffer.from(x.bytes));
      expect(await backend.readBlob("s1", c.hash)).toBeUndefined();
      expect((await backend.listBlobs("s1")).sort()).toEqual([a.hash, b.hash, many[0]!.hash].sort());
    },
  );
}

/** A batch holding one name that is no hash is INVALID_ARGUMENT, and none of its blobs is stored. */
async function expectBatchWithBadNameWritesNothing(
  locked: LockedSession,
  write: (blobs: [string, Uint8Array][]) => Promise<string[]>,
): Promise<void> {
  const c = blob("never stored");
  await expectCode(
    write([
      [c.hash, c.bytes],
      ["not-a-hash", Buffer.from("x")],
    ]),
    "INVALID_ARGUMENT",
  );
  expect(await locked.hasBlob(c.hash)).toBe(false);
}
