// A lease whose holder is a process of this machine that is gone is taken over at once, not after lockStaleMs
// (docs/ARCHITECTURE.md, "Lock lease"). Every test here gives the lock a stale threshold of a minute and the
// waiter a wait of a few seconds: a waiter that waits for staleness gets LOCKED, one that takes over gets on.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAgentTapeError } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

const staleMs = 60_000;
const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });

/** A session whose last writer was killed (SIGKILL) right after its first append, its lease still held. */
async function killedAfterWrite() {
  const root = await tempDir();
  const store = openStore({ root });
  const { id } = await store.create({ workspace: await tempDir() });
  await store.close();
  const writer = new Child("append-and-hold.ts", [root, id, String(staleMs)]);
  children.push(writer);
  expect(await writer.waitForLine((line) => line.startsWith("appended "))).toBe("appended 1");
  const note = join(root, id, "events.holder");
  const written = await readFile(note, "utf8");
  writer.kill("SIGKILL");
  await writer.done();
  return { root, id, note, written, pid: writer.process.pid! };
}

/** The outcome of one append by a new store that waits `waitMs` for the lock. */
async function appendWaiting(root: string, id: string, waitMs: number) {
  const store = openStore({ root, lockStaleMs: staleMs, lockWaitMs: waitMs });
  try {
    return (await store.append(id, say("the next process"))).sequence;
  } catch (error) {
    if (isAgentTapeError(error)) return error.code;
    throw error;
  } finally {
    await store.close();
  }
}

async function sequences(root: string, id: string): Promise<number[]> {
  const store = openStore({ root });
  try {
    const out: number[] = [];
    for await (const event of store.read(id)) out.push(event.sequence);
    return out;
  } finally {
    await store.close();
  }
}

/** The holder note's second line: what identifies the process that wrote it, and its lock folder. */
const identity = (note: string) => JSON.parse(note.split("\n")[1]!) as Record<string, unknown>;
const withIdentity = (note: string, change: Record<string, unknown>) =>
  `${note.split("\n")[0]}\n${JSON.stringify({ ...identity(note), ...change })}\n`;

// Each test starts a child (a tsx start costs seconds on a loaded machine) and waits for LOCKED a few times.
describe("fs backend: a lock whose holder died", { timeout: 120_000 }, () => {
  it("a process SIGKILLed right after a write: the next one takes its lease over at once and appends", async () => {
    const { root, id, written, pid } = await killedAfterWrite();
    expect(written.split("\n")[0]).toBe(String(pid));
    expect(await appendWaiting(root, id, 10_000)).toBe(2);
    expect(await sequences(root, id)).toEqual([1, 2]);
  });

  it("its pid now another live process's (pid reused, another start time): taken over at once", async () => {
    const { root, id, note, written } = await killedAfterWrite();
    // This test's own process stands in for the one that got the pid: alive, started at another time.
    await writeFile(note, `${process.pid}\n${written.split("\n").slice(1).join("\n")}`);
    expect(await appendWaiting(root, id, 10_000)).toBe(2);
  });

  it("a holder that is alive but stopped (SIGSTOP, so it refreshes nothing) keeps its lock: LOCKED", async () => {
    const root = await tempDir();
    const store = openStore({ root });
    const { id } = await store.create({ workspace: await tempDir() });
    await store.close();
    const holder = new Child("hold-session-lock.ts", [root, id, String(staleMs)]);
    children.push(holder);
    expect(await holder.waitForLine(() => true)).toBe("locked");
    holder.kill("SIGSTOP");
    try {
      expect(await appendWaiting(root, id, 1500)).toBe("LOCKED");
    } finally {
      holder.kill("SIGCONT");
    }
  });

  it("a note that is not surely the holder's is not trusted: LOCKED until stale, however dead the pid", async () => {
    const { root, id, note, written, pid } = await killedAfterWrite();
    const appendWithNote = async (text: string) => {
      await writeFile(note, text);
      return appendWaiting(root, id, 1000);
    };
    expect(await appendWithNote(withIdentity(written, { boot: "00000000-0000-0000-0000-000000000000" }))).toBe(
      "LOCKED",
    );
    // A container has a PID namespace of its own: its pids are not this machine's.
    expect(await appendWithNote(withIdentity(written, { pidNamespace: "pid:[1]" }))).toBe("LOCKED");
    expect(await appendWithNote(`${pid}\n{"start":`)).toBe("LOCKED");
    expect(await appendWithNote(`${pid}\n`)).toBe("LOCKED");
    // The very note it wrote: taken over (so what refused the others was the note).
    expect(await appendWithNote(written)).toBe(2);
    // A new lock folder at the path (often with the inode number of the one the writer took), as a holder killed
    // before it wrote its own note leaves it: the dead writer's note names the folder it took, not this one.
    await mkdir(join(root, id, "events.jsonl.lock"));
    expect(await appendWithNote(written)).toBe("LOCKED");
  });
});
