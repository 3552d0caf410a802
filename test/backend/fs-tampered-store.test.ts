import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync } from "node:fs";
import { mkdir, readdir, readFile, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/index.js";
import { CheckpointStore, type SessionStore, rewind, verify } from "../../src/index.js";
import { codeOf, filesBelow, within } from "../helpers/outcomes.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// Parts of a session folder replaced by symlinks or FIFOs, as anyone who can write the folder could
// (docs/ARCHITECTURE.md, "Confinement"): the store follows none of them and hangs on none of them.

const fifos: string[] = [];
afterEach(async () => {
  // A read blocked on a FIFO holds a thread until a writer comes: be that writer, so nothing stays stuck.
  for (const fifo of fifos.splice(0)) {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      // no reader waiting
    }
  }
});

const HASH = "ab".repeat(32);

/**
 * A session with one capture of f.txt (v1, then v2 in the workspace) and new.txt. `loose`: the files are 6 KB of
 * random text, so their blobs are files of their own; else a few bytes, which go into the session's pack.
 */
async function scene(loose = true) {
  const text = (label: string) => (loose ? `${label}-${randomBytes(4500).toString("base64")}` : label);
  const v1 = text("v1");
  const v2 = text("v2");
  const base = await realpath(await tempDir("agent-tape-store-tamper-"));
  const workspace = join(base, "ws");
  const outside = join(base, "outside");
  const root = join(base, "sessions");
  await mkdir(workspace);
  await mkdir(join(outside, ".incoming"), { recursive: true });
  await mkdir(join(outside, "ab"));
  await writeFile(join(outside, "precious.txt"), "precious");
  await writeFile(join(outside, ".incoming", "keep.txt"), "keep");
  await writeFile(join(outside, "ab", HASH), "looks like a blob");
  await writeFile(join(workspace, "f.txt"), v1);
  const store = openStore({ backend: fsBackend({ root, packBlobsUnder: 4096 }) });
  const { id } = await store.create({ workspace });
  const start = await store.append(id, { type: "message", payload: { role: "user", content: "go" } });
  const checkpoints = new CheckpointStore(store);
  await checkpoints.capture(id, { tool: "edit", paths: ["f.txt", "new.txt"] });
  await writeFile(join(workspace, "f.txt"), v2);
  await writeFile(join(workspace, "new.txt"), text("made"));
  await store.close();
  const dir = join(root, id);
  return { base, workspace, outside, root, dir, id, target: start.sequence, v2 };
}

function reopen(root: string): SessionStore {
  const store = openStore({ backend: fsBackend({ root, packBlobsUnder: 4096 }), lockWaitMs: 2000 });
  return store;
}

function mkfifo(path: string): void {
  execFileSync("mkfifo", [path]);
  fifos.push(path);
}

describe("store parts replaced by symlinks", () => {
  it("events.jsonl as a link to an outside file: append is STORE_TAMPERED and the file is untouched", async () => {
    const s = await scene();
    await rm(join(s.dir, "events.jsonl"));
    await symlink(join(s.outside, "precious.txt"), join(s.dir, "events.jsonl"));
    const before = await filesBelow(s.outside);
    const store = reopen(s.root);
    const code = await codeOf(store.append(s.id, { type: "message", payload: { role: "user", content: "x" } }));
    expect(await filesBelow(s.outside)).toEqual(before);
    expect(code).toBe("STORE_TAMPERED");
  });

  it("blobs/ as a link outside with a leftover in-flight note: recovery deletes and writes nothing there", async () => {
    const s = await scene();
    await rename(join(s.dir, "blobs"), join(s.base, "blobs-moved"));
    await symlink(s.outside, join(s.dir, "blobs"));
    await writeFile(join(s.dir, "records", "blobs-in-flight.json"), JSON.stringify({ pid: 1 }));
    const before = await filesBelow(s.outside);
    const store = reopen(s.root);
    const code = await codeOf(store.append(s.id, { type: "message", payload: { role: "user", content: "x" } }));
    await codeOf(new CheckpointStore(store).capture(s.id, { tool: "edit", paths: ["f.txt"] }));
    expect(await filesBelow(s.outside)).toEqual(before);
    expect(code).toBe("STORE_TAMPERED");
  });

  it("blobs/.incoming as a link outside: a shell command's scan (blobs not fsynced) writes nothing there", async () => {
    const s = await scene();
    await rm(join(s.dir, "blobs", ".incoming"), { recursive: true, force: true });
    await symlink(join(s.outside, ".incoming"), join(s.dir, "blobs", ".incoming"));
    const before = await filesBelow(s.outside);
    const store = reopen(s.root);
    const code = await codeOf(new CheckpointStore(store).aroundCommand(s.id, { tool: "bash" }, () => undefined));
    expect(await filesBelow(s.outside)).toEqual(before);
    expect(code).toBe("STORE_TAMPERED");
  });

  it("blobs/pack as a link outside: a shell command's scan writes nothing there, no blob read through it", async () => {
    const s = await scene(false);
    await rename(join(s.dir, "blobs", "pack"), join(s.outside, "pack"));
    await symlink(join(s.outside, "pack"), join(s.dir, "blobs", "pack"));
    const before = await filesBelow(s.outside);
    const store = reopen(s.root);
    await writeFile(join(s.workspace, "f.txt"), "v3");
    const code = await codeOf(new CheckpointStore(store).aroundCommand(s.id, { tool: "bash" }, () => undefined));
    expect(await filesBelow(s.outside)).toEqual(before);
    expect(code).toBe("STORE_TAMPERED");
    expect(await codeOf(rewind(store, s.id, { toSequence: s.target, dryRun: true }))).toBe("STORE_TAMPERED");
  });

  it("records/ as a link outside: a rewind deletes and writes nothing there", async () => {
    const s = await scene();
    await rm(join(s.dir, "records"), { recursive: true, force: true });
    await symlink(s.outside, join(s.dir, "records"));
    // An old archive as a rewind would leave one: a rewind drops older archives, so it would delete this.
    await writeFile(join(s.outside, "rewind-archive-1.json"), JSON.stringify({ events: [] }));
    const before = await filesBelow(s.outside);
    const store = reopen(s.root);
    const code = await codeOf(rewind(store, s.id, { toSequence: s.target }));
    expect(await filesBelow(s.outside)).toEqual(before);
    expect(code).toBe("STORE_TAMPERED");
  });
});

describe("store files replaced by FIFOs", () => {
  it("a blob as a FIFO: verify and a dry run finish, the blob reported unreadable", async () => {
    const s = await scene();
    const shard = (await readdir(join(s.dir, "blobs"))).find((name) => name.length === 2)!;
    const blob = (await readdir(join(s.dir, "blobs", shard)))[0]!;
    await rm(join(s.dir, "blobs", shard, blob));
    mkfifo(join(s.dir, "blobs", shard, blob));
    const store = reopen(s.root);
    const report = await within(5000, verify(store, s.id));
    expect(report).not.toBe("hung");
    expect(report !== "hung" && report.problems.map((p) => p.kind)).toContain("blob_unreadable");
    const dry = await within(5000, codeOf(rewind(store, s.id, { toSequence: s.target, dryRun: true })));
    expect(dry).not.toBe("hung");
    const real = await within(5000, codeOf(rewind(store, s.id, { toSequence: s.target })));
    expect(real).toBe("STORE_TAMPERED");
    // The rewind let go of the lock: another store (as another process would) writes, not LOCKED.
    const other = reopen(s.root);
    const append = other.append(s.id, { type: "message", payload: { role: "user", content: "after" } });
    expect(await within(5000, codeOf(append))).toBeUndefined();
    expect(await readFile(join(s.workspace, "f.txt"), "utf8")).toBe(s.v2);
  });

  it("a pack segment as a FIFO: verify and a rewind finish, blobs reported unreadable, nothing changed", async () => {
    const s = await scene(false);
    const segment = join(s.dir, "blobs", "pack", "00000001.pack");
    await rm(segment);
    mkfifo(segment);
    const store = reopen(s.root);
    const report = await within(5000, verify(store, s.id));
    expect(report).not.toBe("hung");
    expect(report !== "hung" && report.problems.map((p) => p.kind)).toContain("blob_unreadable");
    const real = await within(5000, codeOf(rewind(store, s.id, { toSequence: s.target })));
    expect(real).toBe("STORE_TAMPERED");
    expect(await readFile(join(s.workspace, "f.txt"), "utf8")).toBe(s.v2);
  });

  it("session.json as a FIFO: list finishes and names the session as unreadable", async () => {
    const s = await scene();
    await rm(join(s.dir, "session.json"));
    mkfifo(join(s.dir, "session.json"));
    const store = reopen(s.root);
    const listed = await within(5000, store.list());
    expect(listed).not.toBe("hung");
    expect(listed !== "hung" && listed.find((info) => info.id === s.id)?.unreadable?.code).toBe("STORE_TAMPERED");
  });
});
