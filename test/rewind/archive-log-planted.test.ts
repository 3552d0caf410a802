// A byte-range archive's copy (records/rewind-archive-<m>.jsonl) and the cut record (events.cuts) replaced by
// what anyone who can write the session folder could plant: a symlink to a file outside holding the very bytes
// archived, a FIFO, another rewind's archive swapped in. The store follows no link, hangs on no FIFO, puts back
// no events but the ones its marker names, and changes nothing outside (docs/ARCHITECTURE.md, "Confinement").
import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync } from "node:fs";
import { copyFile, mkdir, readFile, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type SessionStore, rewind, undoRewind } from "../../src/index.js";
import { codeOf, filesBelow, within } from "../helpers/outcomes.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const fifos: string[] = [];
afterEach(async () => {
  for (const fifo of fifos.splice(0)) {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK)); // free a read blocked on it, if any
    } catch {
      // no reader waiting
    }
  }
});

const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });

/** A session rewound twice (two archives), the second rewind not undone; a folder outside with a file. */
async function scene() {
  const base = await realpath(await tempDir("agent-tape-archive-planted-"));
  const root = join(base, "sessions");
  const outside = join(base, "outside");
  await mkdir(outside);
  const store = openStore({ root });
  const { id } = await store.create();
  for (let i = 0; i < 20; i++) await store.append(id, say(`event ${i} ${"é".repeat(100)}`));
  const first = await rewind(store, id, { toSequence: 15, mode: "conversation", keepUndo: 5 });
  for (let i = 0; i < 10; i++) await store.append(id, say(`later ${i}`));
  const second = await rewind(store, id, { toSequence: 10, mode: "conversation", keepUndo: 5 });
  await store.close();
  const records = join(root, id, "records");
  const copy = (marker: number) => join(records, `rewind-archive-${marker}.jsonl`);
  return {
    root,
    id,
    outside,
    log: join(root, id, "events.jsonl"),
    cuts: join(root, id, "events.cuts"),
    copy: copy(second.markerSequence!),
    otherCopy: copy(first.markerSequence!),
  };
}

function reopen(root: string): SessionStore {
  const store = openStore({ root, lockWaitMs: 2000 });
  return store;
}

describe("a planted archive copy", () => {
  it("a symlink to an outside file with the very bytes archived: STORE_TAMPERED, nothing changes", async () => {
    const s = await scene();
    const outsideCopy = join(s.outside, "copy.jsonl");
    await copyFile(s.copy, outsideCopy);
    await rm(s.copy);
    await symlink(outsideCopy, s.copy);
    const log = await readFile(s.log);
    const outsideBefore = await filesBelow(s.outside);
    const store = reopen(s.root);
    expect(await codeOf(undoRewind(store, s.id))).toBe("STORE_TAMPERED");
    expect((await readFile(s.log)).equals(log)).toBe(true);
    expect(await filesBelow(s.outside)).toEqual(outsideBefore);
  });

  it("a FIFO: STORE_TAMPERED without waiting for a writer", async () => {
    const s = await scene();
    const log = await readFile(s.log);
    await rm(s.copy);
    execFileSync("mkfifo", [s.copy]);
    fifos.push(s.copy);
    const store = reopen(s.root);
    expect(await within(10_000, codeOf(undoRewind(store, s.id)))).toBe("STORE_TAMPERED");
    expect((await readFile(s.log)).equals(log)).toBe(true);
  });

  it("another rewind's copy swapped in: STORE_TAMPERED, the log as it was", async () => {
    const s = await scene();
    const log = await readFile(s.log);
    await rename(s.otherCopy, s.copy);
    const store = reopen(s.root);
    expect(await codeOf(undoRewind(store, s.id))).toBe("STORE_TAMPERED");
    expect((await readFile(s.log)).equals(log)).toBe(true);
  });
});

describe("a planted cut record", () => {
  it("events.cuts as a symlink to an outside file: the rewind is refused and the file outside untouched", async () => {
    const s = await scene();
    await undoRewind(reopen(s.root), s.id); // the tape long again, so the next rewind cuts in place
    const outsideFile = join(s.outside, "precious.txt");
    await writeFile(outsideFile, "precious");
    await rm(s.cuts, { force: true });
    await symlink(outsideFile, s.cuts);
    const store = reopen(s.root);
    const before = (await store.readAll(s.id)).map((e) => e.id);
    const outcome = await codeOf(rewind(store, s.id, { toSequence: 5, mode: "conversation" }));
    expect(outcome === "STORE_TAMPERED" || outcome === "REWIND_FAILED").toBe(true);
    expect(await readFile(outsideFile, "utf8")).toBe("precious");
    expect((await store.readAll(s.id)).map((e) => e.id)).toEqual(before);
  });

  it("events.cuts as a FIFO: a reader's and a rewind's look at it neither hang nor change the log", async () => {
    const s = await scene();
    await rm(s.cuts, { force: true });
    execFileSync("mkfifo", [s.cuts]);
    fifos.push(s.cuts);
    const store = reopen(s.root);
    const before = await within(10_000, store.readAll(s.id));
    if (before === "hung") throw new Error("readAll hung on the FIFO");
    const outcome = await within(10_000, codeOf(rewind(store, s.id, { toSequence: 3, mode: "conversation" })));
    expect(outcome === "STORE_TAMPERED" || outcome === "REWIND_FAILED").toBe(true);
    expect((await store.readAll(s.id)).map((e) => e.id)).toEqual(before.map((e) => e.id));
  });
});
