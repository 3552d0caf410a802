import { mkdir, readFile, realpath, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, type SessionStore, rewind, undoRewind } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// Code in the workspace racing the library (docs/ARCHITECTURE.md, "Confinement"): a child process flips a folder
// of the workspace between a place inside it and a folder outside, while this process captures, rewinds and undoes
// through it. Whatever the timing, no byte outside may be read into a blob, written or deleted.

const children = childrenKilledAfterEach(); // registered last, so it runs first: children die before their folders go

// Rounds in `npm test`, and when soaking (test/helpers/rounds.ts): 400 / 1500 captures, 150 / 600 walks,
// 80 / 300 rewinds, each with one undo.
const CAPTURE_ROUNDS = rounds(400, 1500);
const WALK_ROUNDS = rounds(150, 600);
const REWIND_ROUNDS = rounds(80, 300);
const OUTSIDE = "OUTSIDE-SECRET";
const OUTSIDE_NEW = "OUTSIDE-NEW";

async function scene(prefix: string) {
  const base = await realpath(await tempDir(prefix));
  const workspace = join(base, "ws");
  const outside = join(base, "outside");
  await mkdir(join(workspace, "real"), { recursive: true });
  await mkdir(outside);
  await writeFile(join(workspace, "real", "f.txt"), "inside-v1");
  await writeFile(join(outside, "f.txt"), OUTSIDE);
  await writeFile(join(outside, "new.txt"), OUTSIDE_NEW);
  const store = openStore({ root: join(base, "sessions"), durability: "none" });
  const { id } = await store.create({ workspace });
  return { base, workspace, outside, store, id, checkpoints: new CheckpointStore(store) };
}

async function startSwapper(mode: "link" | "folder", link: string, inside: string, outside: string) {
  const child = new Child("symlink-swapper.ts", [mode, link, inside, outside]);
  children.push(child);
  await child.waitForLine((line) => line === "swapping");
  return child;
}

/** How many of the session's blobs hold bytes that only exist outside the workspace. */
async function blobsFromOutside(store: SessionStore, id: string): Promise<number> {
  let found = 0;
  for (const hash of await store.backend.listBlobs(id)) {
    const bytes = (await store.backend.readBlob(id, hash))!.toString();
    if (bytes.includes("OUTSIDE")) found++;
  }
  return found;
}

describe("confinement against a process swapping symlinks", () => {
  it(`${CAPTURE_ROUNDS} captures of d/f.txt while d flips inside/outside read nothing outside`, async () => {
    const s = await scene("agent-tape-race-capture-");
    await symlink(join(s.workspace, "real"), join(s.workspace, "d"));
    await startSwapper("link", join(s.workspace, "d"), join(s.workspace, "real"), s.outside);
    let readOutside = 0;
    let captured = 0;
    for (let round = 0; round < CAPTURE_ROUNDS; round++) {
      const event = await s.checkpoints.capture(s.id, { tool: "edit", paths: ["d/f.txt"] });
      const file = event!.payload.files[0]!;
      if (file.kind !== "blob") continue;
      captured++;
      if ((await s.checkpoints.readBlob(s.id, file.blob)).toString() === OUTSIDE) readOutside++;
    }
    console.log(`capture race: ${readOutside} of ${CAPTURE_ROUNDS} captures (${captured} stored) read outside`);
    expect(readOutside).toBe(0);
    expect(await blobsFromOutside(s.store, s.id)).toBe(0);
    await s.store.close();
  }, 300_000);

  it(`${WALK_ROUNDS} captures of a folder whose subfolder flips to a link outside read nothing outside`, async () => {
    const s = await scene("agent-tape-race-walk-");
    await mkdir(join(s.workspace, "top", "sub"), { recursive: true });
    await writeFile(join(s.workspace, "top", "sub", "f.txt"), "inside-v1");
    const stash = join(s.workspace, "stash");
    await startSwapper("folder", join(s.workspace, "top", "sub"), stash, s.outside);
    let readOutside = 0;
    for (let round = 0; round < WALK_ROUNDS; round++) {
      const event = await s.checkpoints.capture(s.id, { tool: "edit", paths: ["top", "top/sub/f.txt"] });
      for (const file of event!.payload.files) {
        if (file.kind !== "blob") continue;
        if ((await s.checkpoints.readBlob(s.id, file.blob)).toString() === OUTSIDE) readOutside++;
      }
    }
    console.log(`walk race: ${readOutside} files read outside over ${WALK_ROUNDS} captures`);
    expect(readOutside).toBe(0);
    await s.store.close();
  }, 300_000);

  it(`${REWIND_ROUNDS} rewinds and undos through a flipping d write and delete nothing outside`, async () => {
    const s = await scene("agent-tape-race-rewind-");
    const real = join(s.workspace, "real");
    await symlink(real, join(s.workspace, "d"));
    const checkpoint = await s.checkpoints.capture(s.id, { tool: "edit", paths: ["d/f.txt", "d/new.txt"] });
    const target = checkpoint!.sequence - 1;
    await startSwapper("link", join(s.workspace, "d"), real, s.outside);
    const seen = { overwritten: 0, deleted: 0, rounds: 0 };
    let restoredInside = 0; // the race must not make the test vacuous: some rewinds do restore
    const errors: string[] = []; // a rewind may fail under the race (a file vanished); it must not leak
    const attempt = (run: () => Promise<unknown>) =>
      run().catch((error: Error) => void errors.push((error as { code?: string }).code ?? error.message));
    const checkOutside = async () => {
      if ((await readFile(join(s.outside, "f.txt"), "utf8")) !== OUTSIDE) seen.overwritten++;
      await readFile(join(s.outside, "new.txt")).catch(() => seen.deleted++);
      await writeFile(join(s.outside, "f.txt"), OUTSIDE);
      await writeFile(join(s.outside, "new.txt"), OUTSIDE_NEW);
    };
    for (let round = 0; round < REWIND_ROUNDS; round++) {
      await writeFile(join(real, "f.txt"), `inside-v${round + 2}`);
      await writeFile(join(real, "new.txt"), "made by the tool");
      // The test edits the files outside the session on purpose: the rewind is told to overwrite them.
      await attempt(() => rewind(s.store, s.id, { toSequence: target, mode: "files", onConflict: "overwrite" }));
      await checkOutside();
      if ((await readFile(join(real, "f.txt"), "utf8")) === "inside-v1") restoredInside++;
      await attempt(() => undoRewind(s.store, s.id, { onConflict: "overwrite" }));
      await checkOutside();
      seen.rounds++;
    }
    const fromOutside = await blobsFromOutside(s.store, s.id);
    console.log(
      `rewind race: over ${seen.rounds} rewind+undo rounds (${restoredInside} restored inside), ` +
        `outside f.txt overwritten ${seen.overwritten} times, ` +
        `outside new.txt deleted ${seen.deleted} times, ${fromOutside} blobs hold outside bytes; ` +
        `${errors.length} calls failed (${[...new Set(errors)].slice(0, 3).join("; ")})`,
    );
    expect(seen).toEqual({ overwritten: 0, deleted: 0, rounds: REWIND_ROUNDS });
    expect(fromOutside).toBe(0);
    expect(restoredInside).toBeGreaterThan(REWIND_ROUNDS / 50);
    await s.store.close();
  }, 600_000);
});
