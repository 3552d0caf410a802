import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rewind } from "../../src/index.js";
import { RECENT_CHANGE_MS } from "../../src/checkpoint/file-stamps.js";
import { bytesRead } from "../helpers/bytes-read.js";
import { workspaceWithStore } from "../helpers/fixture.js";
import { put } from "../helpers/rewind-workspace.js";

const FILES = 16;
const FILE_BYTES = 256 * 1024;

/**
 * A session whose one tool call turned FILES small files into FILE_BYTES of random bytes each (so the current
 * files, which the plan reads, are nearly all a rewind has to read), then left them alone past RECENT_CHANGE_MS.
 */
async function bigEditsLeftAlone() {
  const t = await workspaceWithStore("agent-tape-read-once-");
  const paths = Array.from({ length: FILES }, (_, i) => `f${i}.bin`);
  for (const path of paths) await put(t.workspace, path, `small ${path}\n`);
  const { id } = await t.store.create({ workspace: t.workspace });
  const target = await t.store.append(id, { type: "message", payload: { role: "user", content: "edit" } });
  const edited = paths.map(() => randomBytes(FILE_BYTES));
  await t.checkpoints.around(id, { tool: "edit", paths, callId: "c1" }, () =>
    Promise.all(paths.map((path, i) => writeFile(join(t.workspace, path), edited[i]!))),
  );
  await new Promise((done) => setTimeout(done, RECENT_CHANGE_MS + 100));
  return { ...t, id, target: target.sequence, paths, edited };
}

describe("a rewind reads each current file once", () => {
  // The plan reads and hashes every file it will replace (the undo keeps those bytes, the conflict check compares
  // their hash); the last look before each write hashed it all again. Now a file whose stat is the one the plan
  // saw is not read again (src/checkpoint/file-stamps.ts). On the code before, the rewind read 2x the files' bytes.
  it(`reads the ${FILES} files it replaces once, not twice`, async () => {
    const t = await bigEditsLeftAlone();
    const current = FILES * FILE_BYTES;
    const before = await bytesRead();
    const report = await rewind(t.store, t.id, { toSequence: t.target });
    const read = (await bytesRead()) - before;
    expect(report.filesRestored).toBe(FILES);
    for (const path of t.paths) expect(await readFile(join(t.workspace, path), "utf8")).toBe(`small ${path}\n`);
    // once is 1x; the rest is headroom for the log, the blobs and the runner's own reads (bytes-read.ts)
    expect(read / current).toBeGreaterThanOrEqual(1);
    expect(read / current).toBeLessThan(1.5);
  }, 60_000);

  // The stat compared instead still catches an edit saved after the plan, even one of the same size and mode.
  it("still finds a file saved after the plan (same size) changed, and leaves the save", async () => {
    const t = await bigEditsLeftAlone();
    const saved = randomBytes(FILE_BYTES);
    const report = await rewind(t.store, t.id, {
      toSequence: t.target,
      onConflict: "skip",
      onProgress: (step) => {
        if (step === "intent-written") writeFileSync(join(t.workspace, "f3.bin"), saved);
      },
    });
    const late = report.conflicts?.find((c) => c.path === "f3.bin");
    expect(late?.change).toBe("changed during the rewind");
    expect(late?.resolution).toBe("skip");
    expect((await readFile(join(t.workspace, "f3.bin"))).equals(saved)).toBe(true);
    expect(await readFile(join(t.workspace, "f4.bin"), "utf8")).toBe("small f4.bin\n");
  }, 60_000);
});
