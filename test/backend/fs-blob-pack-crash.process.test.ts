import { createHash, randomBytes, randomInt } from "node:crypto";
import { readdir, readFile, realpath } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/index.js";
import { scanSegment } from "../../src/backend/fs/pack-format.js";
import { childrenKilledAfterEach, Child } from "../helpers/children.js";
import { rounds } from "../helpers/rounds.js";
import { tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach(); // registered last, so it runs first: children die before their folders go

// 3 rounds in `npm test`, 12 when soaking (test/helpers/rounds.ts). Checked against a compaction that deleted the
// old segments before writing the new one: it lost live blobs in the first round.
const ROUNDS = rounds(3, 12);
const BLOBS = 1500; // about 3.7 MB of pack: a compaction rewrites all of it, a window a kill can land in
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe("a pack writer killed at a random moment", () => {
  it("leaves every blob it wrote and did not start deleting whole, and a pack the next writer appends to", async () => {
    const root = await realpath(await tempDir("agent-tape-pack-crash-"));
    const backend = fsBackend({ root, lockStaleMs: 1000, packBlobsUnder: 4096 });
    await backend.createSession({ id: "s", createdAt: "2025-01-01T00:00:00.000Z" });
    const seen = { roundsWithSegmentsLeft: 0, roundsKilledInCompaction: 0, roundsWithTempLeft: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const child = new Child("pack-writer.ts", [root, "s", String(BLOBS)]);
      children.push(child);
      // A compaction timed from its two lines, then a kill at a random moment of the next one (or just after it).
      await child.waitForLine((line) => line === "compacting");
      const started = performance.now();
      await child.waitForLine((line) => line === "compacted");
      const took = performance.now() - started;
      await child.waitForLine((line) => line === "compacting");
      await pause(randomInt(0, Math.ceil(took * 1.2) + 1));
      child.kill("SIGKILL");
      expect((await child.done()).signal).toBe("SIGKILL");
      children.splice(children.indexOf(child), 1);

      if (child.lines.at(-1) === "compacting") seen.roundsKilledInCompaction++;
      const incoming = await readdir(join(root, "s", "blobs", ".incoming")).catch(() => []);
      if (incoming.length > 0) seen.roundsWithTempLeft++;
      const wrote = new Set<string>();
      for (const line of child.lines) {
        const [what, hash] = line.split(" ");
        if (what === "wrote") wrote.add(hash!);
        if (what === "deleting") wrote.delete(hash!);
      }
      const segments = (await readdir(join(root, "s", "blobs", "pack")))
        .filter((name) => name.endsWith(".pack"))
        .sort();
      if (segments.length > 1) seen.roundsWithSegmentsLeft++;
      // Read without the lock, as any reader may: each blob whole, under its name.
      const reader = fsBackend({ root, packBlobsUnder: 4096 });
      for (const hash of wrote) {
        const bytes = await reader.readBlob("s", hash);
        expect(bytes && sha256(bytes), `round ${round}: ${hash}`).toBe(hash);
      }
      // The next holder (once the dead child's lock is stale) appends after the whole entries, and reads them back.
      const locked = await backend.lock("s", { waitMs: 5000 });
      const extra = randomBytes(2000);
      await locked.writeBlob(sha256(extra), extra);
      await locked.release();
      expect(await backend.readBlob("s", sha256(extra))).toEqual(extra);
      const newest = (await readdir(join(root, "s", "blobs", "pack")))
        .filter((name) => name.endsWith(".pack"))
        .sort()
        .at(-1)!;
      expect(scanSegment(await readFile(join(root, "s", "blobs", "pack", newest)), 0).after).toBe("nothing");
      for (const hash of wrote) expect(sha256((await backend.readBlob("s", hash))!)).toBe(hash);
    }
    console.log(
      `pack crash: ${ROUNDS} rounds, ${seen.roundsKilledInCompaction} killed inside a compaction, ` +
        `${seen.roundsWithTempLeft} leaving its temp file, ${seen.roundsWithSegmentsLeft} more than one segment`,
    );
  }, 180_000);
});
