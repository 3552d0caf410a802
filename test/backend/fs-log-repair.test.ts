import { appendFile, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import type { CorruptLine } from "../../src/backend/types.js";
import { event, events, readAll } from "../helpers/stored-events.js";
import { expectRejection } from "../helpers/expect-rejection.js";
import { tempDir } from "../helpers/fixture.js";

const created = "2025-01-01T00:00:00.000Z";

async function sessionWith(count: number) {
  const root = await tempDir();
  const backend = fsBackend({ root });
  await backend.createSession({ id: "s1", createdAt: created }, events("s1", count));
  return { backend, log: join(root, "s1", "events.jsonl") };
}

describe("fs backend: a torn last line (a crash mid-append)", () => {
  it("is not read, and lastEvent is the last complete event", async () => {
    const { backend, log } = await sessionWith(3);
    await appendFile(log, '{"v":1,"id":"s1-4","sessionId":"s1","seq');
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2, 3]);
    expect((await backend.lastEvent("s1"))?.sequence).toBe(3);
  });

  it("is cut back to the last newline when the lock is taken, so the next line is not glued to it", async () => {
    const { backend, log } = await sessionWith(3);
    const whole = await readFile(log);
    await appendFile(log, '{"v":1,"id":"s1-4","sessionId":"s1","seq');
    const locked = await backend.lock("s1");
    expect(await readFile(log)).toEqual(whole);
    expect(locked.lastSequence).toBe(3);
    await locked.append([event("s1", 4)], { sync: true });
    await locked.release();
    const text = await readFile(log, "utf8");
    expect(text.endsWith("\n")).toBe(true);
    expect(
      text
        .slice(0, -1)
        .split("\n")
        .map((line) => JSON.parse(line).sequence),
    ).toEqual([1, 2, 3, 4]);
  });

  it("is cut even when it is the only thing in the log", async () => {
    const { backend, log } = await sessionWith(0);
    await writeFile(log, '{"v":1,"id":"s1-1"');
    expect(await readAll(backend, "s1")).toEqual([]);
    const locked = await backend.lock("s1");
    expect((await stat(log)).size).toBe(0);
    expect(locked.lastSequence).toBe(0);
    await locked.append([event("s1", 1)], { sync: true });
    await locked.release();
    expect(await readAll(backend, "s1")).toEqual([event("s1", 1)]);
  });
});

describe("fs backend: a corrupt line", () => {
  it("in the middle of the log is LOG_CORRUPT naming the file and the line", async () => {
    const { backend, log } = await sessionWith(4);
    const lines = (await readFile(log, "utf8")).split("\n");
    lines[1] = '{"v":1,"id":"broken", not json';
    await writeFile(log, lines.join("\n"));
    const error = await expectRejection(readAll(backend, "s1"), "LOG_CORRUPT");
    expect(error.file).toBe(log);
    expect(error.line).toBe(2);
    expect((error as Error).message).toContain(`${log}:2`);
  });

  it("is reported through onCorrupt and skipped when the caller asks to salvage", async () => {
    const { backend, log } = await sessionWith(4);
    const lines = (await readFile(log, "utf8")).split("\n");
    lines[1] = '{"v":1,"id":"broken", not json';
    lines[2] = JSON.stringify({
      v: 1,
      id: "no-sequence",
      sessionId: "s1",
      type: "message",
      createdAt: created,
      payload: {},
    });
    await writeFile(log, lines.join("\n"));
    const corrupt: CorruptLine[] = [];
    const salvaged = await readAll(backend, "s1", { onCorrupt: (bad) => corrupt.push(bad) });
    expect(salvaged.map((e) => e.sequence)).toEqual([1, 4]);
    expect(corrupt.map((c) => c.line)).toEqual([2, 3]);
    expect(corrupt[0]?.text).toBe('{"v":1,"id":"broken", not json');
    expect(corrupt.every((c) => c.reason.length > 0)).toBe(true);
  });

  it("a sequence that does not increase is corrupt too, never silently yielded twice", async () => {
    const { backend, log } = await sessionWith(3);
    await appendFile(log, JSON.stringify(event("s1", 2)) + "\n");
    const error = await expectRejection(readAll(backend, "s1"), "LOG_CORRUPT");
    expect(error.line).toBe(4);
  });

  // A last line whose sequence goes backwards (5 then 2), or that repeats the one before it.
  for (const [name, lastSequence] of [
    ["going backwards", 2],
    ["duplicated", 5],
  ] as const) {
    it(`a last line ${name} makes lock refuse with LOG_CORRUPT and write nothing after it`, async () => {
      const { backend, log } = await sessionWith(5);
      await appendFile(log, JSON.stringify(event("s1", lastSequence)) + "\n");
      const before = await readFile(log);
      const error = await expectRejection(
        (async () => {
          const locked = await backend.lock("s1", { waitMs: 1000 });
          try {
            await locked.append([event("s1", locked.lastSequence + 1)]);
            return `appended #${locked.lastSequence}`;
          } finally {
            await locked.release();
          }
        })().then((appended) => {
          console.log(`last line ${name}: ${appended}`);
          return appended;
        }),
        "LOG_CORRUPT",
      );
      expect(error.line).toBe(6);
      expect(await readFile(log)).toEqual(before);
    });
  }

  it("as the last complete line makes lock refuse with LOG_CORRUPT and write nothing after it", async () => {
    const { backend, log } = await sessionWith(2);
    await appendFile(log, "not an event at all\n");
    const before = await readFile(log);
    const error = await expectRejection(backend.lock("s1", { waitMs: 1000 }), "LOG_CORRUPT");
    expect(error.line).toBe(3);
    expect(await readFile(log)).toEqual(before);
  });
});

describe("fs backend: truncateAfter", () => {
  it("replaces the log whole: a read that started before it still sees the old log to its end", async () => {
    // Several 64 KB read chunks long, so the reader is part-way through the file when it changes.
    const { backend } = await sessionWith(0);
    const count = 3000;
    const locked = await backend.lock("s1");
    await locked.append(
      events("s1", count, (n) => `event ${n} `.padEnd(200, ".")),
      { sync: false },
    );
    const iterator = backend.readEvents("s1")[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.value?.sequence).toBe(1);
    await locked.truncateAfter(10);
    await locked.release();
    let seen = 1;
    let last = 1;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      seen++;
      last = next.value.sequence;
    }
    expect([seen, last]).toEqual([count, count]);
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual(events("s1", 10).map((e) => e.sequence));
  });
});
