import { mkdir, readdir, rename, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { isAgentTapeError } from "../../src/index.js";
import { packListing } from "../../src/backend/fs/pack-listing.js";
import { tempDir } from "../helpers/fixture.js";

// The pack folder's listing, kept by a process while the folder stays as it listed it (src/backend/fs/pack-listing.ts):
// once the folder's last change has settled (2 s), every later change must show at the next look, however soon.

const segment = (n: number) => `${String(n).padStart(8, "0")}.pack`;
const dictionary = (c: string) => `dictionary-${c.repeat(64)}`;

async function truth(dir: string) {
  const names = await readdir(dir);
  return {
    seqs: names
      .filter((n) => /^\d{8}\.pack$/.test(n))
      .map((n) => Number(n.slice(0, 8)))
      .sort((a, b) => a - b),
    dictionaries: names
      .filter((n) => n.startsWith("dictionary-"))
      .map((n) => n.slice(11))
      .sort(),
  };
}

describe("fs backend: the pack folder's listing", () => {
  it("a kept listing never hides a change made after it: added, removed, renamed, the folder replaced", async () => {
    const base = await tempDir("agent-tape-pack-listing-");
    const dir = join(base, "pack");
    await mkdir(dir);
    await writeFile(join(dir, segment(1)), "");
    await writeFile(join(dir, dictionary("a")), "");
    await sleep(2100); // past the settling time: the next listing is kept
    expect(packListing("s", dir)).toEqual(await truth(dir));
    expect(packListing("s", dir)).toEqual({ seqs: [1], dictionaries: ["a".repeat(64)] });

    const changes: [string, () => Promise<unknown>][] = [
      ["a segment added", () => writeFile(join(dir, segment(2)), "")],
      ["a dictionary added", () => writeFile(join(dir, dictionary("b")), "")],
      ["a segment removed", () => rm(join(dir, segment(1)))],
      ["a segment renamed in", () => rename(join(dir, segment(2)), join(dir, segment(3)))],
      ["a file's times set back (the folder's stay)", () => utimes(join(dir, segment(3)), 0, 0)],
      [
        "a temp renamed over a segment",
        async () => {
          await writeFile(join(base, "temp"), "x");
          await rename(join(base, "temp"), join(dir, segment(3)));
        },
      ],
      ["the folder's own times set back", () => utimes(dir, 0, 0)],
      [
        "the folder replaced by another",
        async () => {
          await mkdir(join(base, "other"));
          await writeFile(join(base, "other", segment(9)), "");
          await rename(dir, join(base, "old"));
          await rename(join(base, "other"), dir);
        },
      ],
    ];
    for (const [what, change] of changes) {
      await change();
      expect(packListing("s", dir), what).toEqual(await truth(dir));
    }
    expect(packListing("s", dir)).toEqual({ seqs: [9], dictionaries: [] });
  }, 10_000);

  it("a link in the folder's place is STORE_TAMPERED even after a kept listing; no folder lists nothing", async () => {
    const base = await tempDir("agent-tape-pack-listing-");
    const dir = join(base, "pack");
    await mkdir(join(base, "elsewhere"));
    await writeFile(join(base, "elsewhere", segment(1)), "");
    expect(packListing("s", dir)).toEqual({ seqs: [], dictionaries: [] });
    await mkdir(dir);
    await writeFile(join(dir, segment(1)), "");
    expect(packListing("s", dir)).toEqual({ seqs: [1], dictionaries: [] });
    await rm(dir, { recursive: true });
    await symlink(join(base, "elsewhere"), dir);
    let error: unknown;
    try {
      packListing("s", dir);
    } catch (caught) {
      error = caught;
    }
    expect(isAgentTapeError(error, "STORE_TAMPERED")).toBe(true);
  });
});
