import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import type { SessionRecord } from "../../src/backend/types.js";
import { event, readAll } from "../helpers/stored-events.js";
import { tempDir } from "../helpers/fixture.js";

function blob(text: string): { hash: string; bytes: Buffer } {
  const bytes = Buffer.from(text);
  return { hash: createHash("sha256").update(bytes).digest("hex"), bytes };
}

describe("fs backend: what a session looks like on disk", () => {
  it("keeps events.jsonl, session.json, blobs/<first byte>/<hash>, records/<name>.json in its folder", async () => {
    const root = await tempDir();
    const backend = fsBackend({ root, packBlobsUnder: 0 }); // a blob of its own (packs: the next test)
    const record: SessionRecord = {
      id: "s1",
      createdAt: "2025-01-01T00:00:00.000Z",
      title: "on disk",
      workspace: "/ws",
    };
    const a = blob("before the edit\n");
    await backend.createSession(record, [event("s1", 1)]);
    const locked = await backend.lock("s1");
    await locked.append([event("s1", 2), event("s1", 3)], { sync: true });
    await locked.writeBlob(a.hash, a.bytes);
    await locked.writeRecord("rewind-intent", { to: 1 });
    await locked.release();

    expect((await readdir(join(root, "s1"))).sort()).toEqual(["blobs", "events.jsonl", "records", "session.json"]);
    expect(JSON.parse(await readFile(join(root, "s1", "session.json"), "utf8"))).toEqual(record);
    expect(await readFile(join(root, "s1", "blobs", a.hash.slice(0, 2), a.hash))).toEqual(a.bytes);
    expect(JSON.parse(await readFile(join(root, "s1", "records", "rewind-intent.json"), "utf8"))).toEqual({ to: 1 });

    const text = await readFile(join(root, "s1", "events.jsonl"), "utf8");
    expect(text.endsWith("\n")).toBe(true);
    const lines = text.slice(0, -1).split("\n");
    // The two events appended together are one batch: their lines carry its bounds (all or nothing on a crash).
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      event("s1", 1),
      { ...event("s1", 2), batch: [2, 3] },
      { ...event("s1", 3), batch: [2, 3] },
    ]);
    // The envelope's documented field order, so lines diff and hash the same everywhere.
    const order = ["v", "id", "sessionId", "sequence", "type", "createdAt", "payload"];
    const batchedOrder = ["v", "id", "sessionId", "sequence", "batch", "type", "createdAt", "payload"];
    expect(lines.map((line) => Object.keys(JSON.parse(line)))).toEqual([order, batchedOrder, batchedOrder]);
  });

  it("keeps small blobs in blobs/pack/00000001.pack, each behind its 52-byte entry header", async () => {
    const root = await tempDir();
    const backend = fsBackend({ root, packBlobsUnder: 4096 });
    const a = blob("before the edit\n");
    const b = blob("another file\n");
    await backend.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z" });
    const locked = await backend.lock("s1");
    await locked.writeBlob(a.hash, a.bytes);
    await locked.writeBlob(b.hash, b.bytes);
    await locked.release();
    expect(await readdir(join(root, "s1", "blobs"))).toEqual(["pack"]);
    const pack = await readFile(join(root, "s1", "blobs", "pack", "00000001.pack"));
    expect(pack.length).toBe(52 * 2 + a.bytes.length + b.bytes.length);
    expect(pack.subarray(0, 4).toString()).toBe("ATPB");
    expect(pack.subarray(12, 44).toString("hex")).toBe(a.hash);
    expect(pack.subarray(52, 52 + a.bytes.length)).toEqual(a.bytes);
    expect(await backend.readBlob("s1", b.hash)).toEqual(b.bytes);
  });

  it("stores blob files read-only, in the session and in a fork's copy", async () => {
    const root = await tempDir();
    const backend = fsBackend({ root, packBlobsUnder: 0 });
    const a = blob("snapshot bytes");
    await backend.createSession({ id: "parent", createdAt: "2025-01-01T00:00:00.000Z" });
    const locked = await backend.lock("parent");
    await locked.writeBlob(a.hash, a.bytes);
    await locked.release();
    await backend.createSession({ id: "child", createdAt: "2025-01-01T00:00:00.000Z" }, [], {
      blobsFrom: { sessionId: "parent", hashes: [a.hash] },
    });
    for (const id of ["parent", "child"]) {
      const { mode } = await stat(join(root, id, "blobs", a.hash.slice(0, 2), a.hash));
      expect(mode & 0o777).toBe(0o444);
    }
  });

  it("getSession rebuilds a record from the log when session.json is gone, since the file is derived", async () => {
    const root = await tempDir();
    const backend = fsBackend({ root, packBlobsUnder: 4096 });
    await backend.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z", title: "lost" }, [event("s1", 1)]);
    await rm(join(root, "s1", "session.json"));
    const rebuilt = await backend.getSession("s1");
    expect(rebuilt?.id).toBe("s1");
    expect(Number.isNaN(Date.parse(rebuilt!.createdAt))).toBe(false);
    expect(await readAll(backend, "s1")).toEqual([event("s1", 1)]);
  });

  it("listSessionIds ignores hidden folders (staging and trash) and stray files", async () => {
    const root = await tempDir();
    const backend = fsBackend({ root, packBlobsUnder: 4096 });
    await backend.createSession({ id: "real", createdAt: "2025-01-01T00:00:00.000Z" });
    await mkdir(join(root, ".staging-real-1-2"));
    await mkdir(join(root, ".deleted-old-1-2"));
    await writeFile(join(root, "notes.txt"), "not a session");
    expect(await backend.listSessionIds()).toEqual(["real"]);
  });

  it("sizeOf counts the bytes of the log, blobs and records", async () => {
    const root = await tempDir();
    const backend = fsBackend({ root, packBlobsUnder: 4096 });
    await backend.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z" });
    const empty = await backend.sizeOf!("s1");
    // Random bytes do not compress: the blob file is stored raw, all 10 000 bytes of it.
    const bytes = randomBytes(10_000);
    const a = { hash: createHash("sha256").update(bytes).digest("hex"), bytes };
    const locked = await backend.lock("s1");
    await locked.writeBlob(a.hash, a.bytes);
    await locked.append([event("s1", 1)], { sync: true });
    await locked.release();
    const log = (await stat(join(root, "s1", "events.jsonl"))).size;
    expect(log).toBeGreaterThan(0);
    expect(await backend.sizeOf!("s1")).toBe(empty + 10_000 + log);
  });
});
