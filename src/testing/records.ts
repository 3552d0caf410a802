import { beforeEach, describe, expect, it } from "vitest";
import type { StorageBackend } from "../backend/types.js";
import { expectCode, record, withLock } from "./fixtures.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea } from "./suite.js";

/** Side records: named JSON values beside the log (rewind intents, archives, notes). */
export const recordsArea: ConformanceArea = (suite) => {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  describe("side records", () => {
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
  });
};

/**
 * Registers (with vitest) the records area of the conformance suite alone;
 * `runBackendConformance` runs every area.
 */
export function runRecordConformance(options: BackendConformanceOptions): void {
  runAreas(options, [recordsArea]);
}
