import { readdir, realpath } from "node:fs/promises";
import { randomInt } from "node:crypto";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/index.js";
import { readVerifiedBlob } from "../../src/blobs/store-then-reference.js";
import { childrenKilledAfterEach, Child } from "../helpers/children.js";
import { rounds } from "../helpers/rounds.js";
import { tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach(); // registered last, so it runs first: children die before their folders go

// 3 rounds in `npm test`, 12 when soaking (test/helpers/rounds.ts). Each round a child makes new sessions, each one's
// first batch of blobs drawing the pack's dictionary, and is killed at a random moment of one.
const ROUNDS = rounds(3, 12);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a writer killed while its pack's dictionary is drawn and written", () => {
  it("leaves every blob it wrote readable, and no entry naming a dictionary that is not there", async () => {
    const seen = { sessions: 0, dictionaries: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const root = await realpath(await tempDir("agent-tape-dictionary-crash-"));
      const child = new Child("dictionary-writer.ts", [root]);
      children.push(child);
      // A round's time from its first two sessions, then a kill at a random moment of the next ones.
      await child.waitForLine((line) => line === "session s1");
      const started = performance.now();
      await child.waitForLine((line) => line === "session s2");
      await pause(randomInt(0, Math.ceil((performance.now() - started) * 2) + 1));
      child.kill("SIGKILL");
      expect((await child.done()).signal).toBe("SIGKILL");
      children.splice(children.indexOf(child), 1);

      const wrote = child.lines.filter((line) => line.startsWith("wrote ")).map((line) => line.split(" "));
      const backend = fsBackend({ root });
      for (const [, id, hash] of wrote) expect((await readVerifiedBlob(backend, id!, hash!)).length).toBeGreaterThan(0);
      // Every blob any session holds reads whole: an entry on disk never names a dictionary that is not.
      for (const id of (await readdir(root)).filter((name) => /^s\d+$/.test(name))) {
        seen.sessions++;
        const pack = await readdir(`${root}/${id}/blobs/pack`).catch(() => []);
        seen.dictionaries += pack.filter((name) => name.startsWith("dictionary-")).length;
        for (const hash of await backend.listBlobs(id)) await readVerifiedBlob(backend, id, hash);
      }
    }
    expect(seen.dictionaries).toBeGreaterThan(0);
    console.log(`dictionary crash: ${ROUNDS} rounds, ${seen.sessions} sessions, ${seen.dictionaries} dictionaries`);
  }, 120_000);
});
