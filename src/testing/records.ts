import { beforeEach, describe, expect, it } from "vitest";
import type { StorageBackend } from "../backend/types.js";
import { event, expectCode, range, record, sha256, withLock } from "./fixtures.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea, type ConformanceSuite } from "./suite.js";

/** Side records: named JSON values beside the log (rewind intents, archives, notes). */
export const recordsArea: ConformanceArea = (suite) => {
  describe("side records", () => {
    sideRecords(suite);
  });

  suite.describeNeeding(["archiveLogAfter"], "archived log ranges (optional)", () => {
    archivedLogRanges(suite);
  });
};

/**
 * Registers (with vitest) the records area of the conformance suite alone;
 * `runBackendConformance` runs every area.
 */
export function runRecordConformance(options: BackendConformanceOptions): void {
  runAreas(options, [recordsArea]);
}

/** Write, replace, delete and read named records. */
function sideRecords(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });
  it("writeRecord stores a value that readRecord returns and listRecords names", async () => {
    const value = { kind: "rewind-intent", targets: [1, 2, 3], nested: { ok: true, none: null }, text: "é\n" };
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", async (locked) => {
      await locked.writeRecord("rewind-intent", value);
      await locked.writeRecord("archive.7", [1, "two"], { durable: false });
    });
    expect(await backend.readRecord("s1", "rewind-intent")).toEqual(value);
    expect(await backend.readRecord("s1", "archive.7")).toEqual([1, "two"]);
    expect((await backend.listRecords("s1")).sort()).toEqual(["archive.7", "rewind-intent"]);
  });

  it("writeRecord replaces a record of the same name", async () => {
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", async (locked) => {
      await locked.writeRecord("state", { step: 1 });
      await locked.writeRecord("state", { step: 2 });
    });
    expect(await backend.readRecord("s1", "state")).toEqual({ step: 2 });
    expect(await backend.listRecords("s1")).toEqual(["state"]);
  });

  it("deleteRecord removes a record, and deleting an absent one is not an error", async () => {
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", async (locked) => {
      await locked.writeRecord("a", 1);
      await locked.writeRecord("b", 2);
      await locked.deleteRecord("a");
      await locked.deleteRecord("a");
      await locked.deleteRecord("never-written");
    });
    expect(await backend.readRecord("s1", "a")).toBeUndefined();
    expect(await backend.readRecord("s1", "b")).toBe(2);
    expect(await backend.listRecords("s1")).toEqual(["b"]);
  });

  it("readRecord of an absent record is undefined", async () => {
    await backend.createSession(record("s1"));
    expect(await backend.readRecord("s1", "absent")).toBeUndefined();
  });

  it("a record name with a path separator is refused with INVALID_ARGUMENT", async () => {
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", async (locked) => {
      for (const name of ["../escape", "a/b", "a\\b"])
        await expectCode(locked.writeRecord(name, 1), "INVALID_ARGUMENT");
    });
    expect(await backend.listRecords("s1")).toEqual([]);
  });
}

/** A byte range of the log copied beside the records and read back (backends that can). */
function archivedLogRanges(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });
  /** The bytes of an archived range, whole. */
  async function archived(name: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of backend.readArchivedLog!("s1", name)) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks);
  }
  /** 300 events of about 4 KB each: a range of them spans more than a megabyte. */
  async function longLog(): Promise<void> {
    const text = "x".repeat(4000);
    await backend.createSession(
      record("s1"),
      range(1, 300).map((n) => event("s1", n, { role: "user", content: `${n} ${text}` })),
    );
  }
  const sequencesIn = (bytes: Buffer) =>
    bytes
      .toString("utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => (JSON.parse(line) as { sequence: number }).sequence);

  suite.withOptional(
    "archiveLogAfter",
    "archiveLogAfter copies the lines after a sequence; readArchivedLog gives back those bytes, as measured",
    async () => {
      await longLog();
      const log = await withLock(backend, "s1", (locked) => locked.archiveLogAfter!(100, "rewind-archive-301"));
      const bytes = await archived("rewind-archive-301");
      expect(log).toEqual({ bytes: bytes.length, sha256: sha256(bytes), events: 200 });
      expect(bytes.length).toBeGreaterThan(200 * 4000);
      expect(bytes.at(-1)).toBe(0x0a);
      expect(sequencesIn(bytes)).toEqual(range(101, 300));
    },
  );

  suite.withOptional(
    "archiveLogAfter",
    "archiveLogAfter replaces an earlier copy of the same name; a copy past the end is empty",
    async () => {
      await longLog();
      await withLock(backend, "s1", async (locked) => {
        await locked.archiveLogAfter!(10, "rewind-archive-301");
        const shorter = await locked.archiveLogAfter!(290, "rewind-archive-301");
        expect(shorter.events).toBe(10);
        const empty = await locked.archiveLogAfter!(300, "rewind-archive-302");
        expect(empty).toEqual({ bytes: 0, sha256: sha256(new Uint8Array()), events: 0 });
      });
      expect(sequencesIn(await archived("rewind-archive-301"))).toEqual(range(291, 300));
      expect((await archived("rewind-archive-302")).length).toBe(0);
    },
  );

  suite.withOptional(
    "archiveLogAfter",
    "deleteRecord with archivedLog removes the copy beside the record; without it the copy stays",
    async () => {
      await longLog();
      await withLock(backend, "s1", async (locked) => {
        await locked.writeRecord("rewind-archive-301", { markerSequence: 301 });
        await locked.archiveLogAfter!(299, "rewind-archive-301");
        await locked.deleteRecord("rewind-archive-301");
      });
      expect(sequencesIn(await archived("rewind-archive-301"))).toEqual([300]);
      await withLock(backend, "s1", (locked) => locked.deleteRecord("rewind-archive-301", { archivedLog: true }));
      expect((await archived("rewind-archive-301")).length).toBe(0);
    },
  );
}
