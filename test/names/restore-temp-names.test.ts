import { execFileSync } from "node:child_process";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type CheckpointStore, type SessionStore, isAgentTapeError, rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/byte-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

// The restore writes each file to a temp name in its folder and renames it into place. That name is short and
// unique to the operation, made exclusively: never the user's name lengthened (a name of 233-255 bytes would pass
// NAME_MAX), never a name a user's own file may have (docs/ARCHITECTURE.md, "Rewind intent").

const immutable: string[] = [];
let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let sessionId: string;

beforeEach(async () => {
  ({ workspace, store, checkpoints } = await workspaceWithStore("agent-tape-temp-names-"));
  sessionId = (await store.create({ workspace })).id;
});
afterEach(async () => {
  for (const path of immutable.splice(0)) execFileSync("chattr", ["-i", path]);
});

const head = async () => (await store.get(sessionId))!.lastSequence;
const say = (content: string) => store.append(sessionId, { type: "message", payload: { role: "user", content } });

/** A tool edits `paths` (captured before): each file gets "edited\n". */
async function edit(...paths: string[]): Promise<void> {
  await checkpoints.around(sessionId, { tool: "edit", paths }, async () => {
    for (const path of paths) await writeFile(join(workspace, path), "edited\n");
  });
}

describe("a user's entry named like the restore temp", () => {
  for (const kind of ["file", "folder", "link"] as const)
    it(`a ${kind} named .tmp-notes.txt-agent-tape-rewind is kept as it is by a rewind of notes.txt`, async () => {
      await writeFile(join(workspace, "notes.txt"), "mine\n");
      const planted = join(workspace, ".tmp-notes.txt-agent-tape-rewind");
      if (kind === "file") await writeFile(planted, "the user's own\n");
      if (kind === "folder") {
        await mkdir(planted);
        await writeFile(join(planted, "inside.txt"), "kept\n");
      }
      if (kind === "link") await symlink("notes.txt", planted);
      const before = byteTreeOf(workspace);
      const target = await head();
      await edit("notes.txt");
      await rewind(store, sessionId, { toSequence: target, mode: "files" });
      expect(byteTreeOf(workspace)).toEqual(before);
      await undoRewind(store, sessionId);
      expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("edited\n");
      expect(byteTreeOf(workspace)[".tmp-notes.txt-agent-tape-rewind"]).toEqual(
        before[".tmp-notes.txt-agent-tape-rewind"],
      );
    });
});

describe("names of 233-255 bytes", () => {
  for (const length of [233, 240, 255])
    it(`a file named with ${length} bytes is restored by a rewind and undone, and the session goes on`, async () => {
      const name = "n".repeat(length);
      const wide = `${"é".repeat(Math.floor((length - 1) / 2))}x`; // multi-byte: 255 bytes, ~128 characters
      await writeFile(join(workspace, name), "first\n");
      await writeFile(join(workspace, wide), "first\n");
      const before = byteTreeOf(workspace);
      const target = await head();
      await edit(name, wide);
      const edited = byteTreeOf(workspace);
      await rewind(store, sessionId, { toSequence: target, mode: "files" });
      expect(byteTreeOf(workspace)).toEqual(before);
      await undoRewind(store, sessionId);
      expect(byteTreeOf(workspace)).toEqual(edited);
      await say("still writable");
      expect((await store.readAll(sessionId)).at(-1)?.payload).toMatchObject({ content: "still writable" });
    });

  it("a symlink named with 255 bytes is restored by a rewind", async () => {
    const name = "l".repeat(255);
    await symlink("somewhere", join(workspace, name));
    const before = byteTreeOf(workspace);
    const target = await head();
    await checkpoints.around(sessionId, { tool: "ln", paths: [name] }, async () => {
      execFileSync("ln", ["-sfn", "elsewhere", name], { cwd: workspace });
    });
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(before);
  });
});

describe("a rewind whose restore and roll-back both fail", () => {
  it("leaves a session that reads, names the way forward, and writes again once the cause is gone", async () => {
    await mkdir(join(workspace, "sub"));
    await writeFile(join(workspace, "sub", "a.txt"), "first\n");
    const target = await head();
    await edit("sub/a.txt");
    await say("after the edit");
    const locked = join(workspace, "sub");
    execFileSync("chattr", ["+i", locked]); // neither restored nor put back (EPERM, even for root)
    immutable.push(locked);
    const failed = await rewind(store, sessionId, { toSequence: target }).catch((e: unknown) => e);
    expect(isAgentTapeError(failed, "REWIND_FAILED")).toBe(true);
    // Reads go on: the tape is as it was.
    expect((await store.readAll(sessionId)).at(-1)?.payload).toMatchObject({ content: "after the edit" });
    // A write says what blocks it and what to do.
    const refused = await say("blocked").catch((e: unknown) => e);
    expect(isAgentTapeError(refused, "REWIND_FAILED")).toBe(true);
    expect((refused as Error).message).toMatch(/EPERM/);
    expect((refused as Error).message).toMatch(/sub\/a\.txt|sub/);
    expect((refused as Error).message).toMatch(/next writer|fix|repair/i);
    execFileSync("chattr", ["-i", locked]);
    immutable.pop();
    await say("written again");
    expect((await store.readAll(sessionId)).at(-1)?.payload).toMatchObject({ content: "written again" });
    expect(await readFile(join(workspace, "sub", "a.txt"), "utf8")).toBe("edited\n"); // rolled back, not forward
  });
});
