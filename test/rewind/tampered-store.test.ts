import { mkdir, readFile, readdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CheckpointStore, SessionStore, isAgentTapeError, rewind, undoRewind } from "../../src/index.js";
import { TempRoots } from "../helpers/temp-root.js";

// Whoever can write the session folder is not trusted to move a rewind outside the workspace
// (docs/ARCHITECTURE.md, "Confinement"): each attack below edits the store by hand, as they could.

const temps = new TempRoots();
const stores: SessionStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  await temps.removeAll();
});

/** A session over `ws` whose `f.txt` was captured as "v1" and then edited, with a victim folder beside it. */
async function editedSession() {
  const base = await realpath(await temps.make("agent-tape-tamper-"));
  const workspace = join(base, "ws");
  const victim = join(base, "victim");
  const root = join(base, "sessions");
  await mkdir(workspace);
  await mkdir(join(victim, "important"), { recursive: true });
  await writeFile(join(workspace, "f.txt"), "v1");
  await writeFile(join(victim, "f.txt"), "victim's own");
  await writeFile(join(victim, "new.txt"), "victim's new");
  await writeFile(join(victim, "important", "keep.txt"), "keep me");
  const store = new SessionStore({ root });
  stores.push(store);
  const { id } = await store.create({ workspace });
  const start = await store.append(id, { type: "message", payload: { role: "user", content: "go" } });
  await new CheckpointStore(store).capture(id, { tool: "edit", paths: ["f.txt", "new.txt"] });
  await writeFile(join(workspace, "f.txt"), "v2");
  await writeFile(join(workspace, "new.txt"), "made by the tool");
  return { base, workspace, victim, root, store, id, target: start.sequence };
}

/** Every file below `dir` with its bytes, to see that nothing there changed. */
async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out[path.slice(dir.length + 1)] = await readFile(path, "utf8");
  }
  return out;
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => (isAgentTapeError(error) ? error.code : String(error)),
  );
}

describe("an edited session.json", () => {
  it("cannot redirect a rewind: the workspace must be the one the tape recorded, else WORKSPACE_MISMATCH", async () => {
    const s = await editedSession();
    const before = await tree(s.victim);
    const meta = join(s.root, s.id, "session.json");
    const record = JSON.parse(await readFile(meta, "utf8"));
    await writeFile(meta, JSON.stringify({ ...record, workspace: s.victim }));

    const reader = new SessionStore({ root: s.root });
    stores.push(reader);
    const code = await codeOf(rewind(reader, s.id, { toSequence: s.target }));
    expect(await tree(s.victim)).toEqual(before);
    expect(code).toBe("WORKSPACE_MISMATCH");
    expect(await codeOf(rewind(reader, s.id, { toSequence: s.target, dryRun: true }))).toBe("WORKSPACE_MISMATCH");
    expect(await tree(s.workspace)).toEqual({ "f.txt": "v2", "new.txt": "made by the tool" });

    // The caller naming the workspace is trusted: the rewind goes where it is told.
    const report = await rewind(reader, s.id, { toSequence: s.target, workspace: s.workspace });
    expect(report.filesRestored + report.filesDeleted).toBe(2);
    expect(await tree(s.workspace)).toEqual({ "f.txt": "v1" });
    expect(await tree(s.victim)).toEqual(before);
  });

  it("cannot redirect an undo either: it goes back to the workspace its rewind recorded", async () => {
    const s = await editedSession();
    await rewind(s.store, s.id, { toSequence: s.target });
    const before = await tree(s.victim);
    const meta = join(s.root, s.id, "session.json");
    const record = JSON.parse(await readFile(meta, "utf8"));
    await writeFile(meta, JSON.stringify({ ...record, workspace: s.victim }));
    const reader = new SessionStore({ root: s.root });
    stores.push(reader);
    await undoRewind(reader, s.id);
    expect(await tree(s.victim)).toEqual(before);
    expect(await tree(s.workspace)).toEqual({ "f.txt": "v2", "new.txt": "made by the tool" });
  });
});
