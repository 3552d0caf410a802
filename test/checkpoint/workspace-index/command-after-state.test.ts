import { execFileSync } from "node:child_process";
import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import {
  CheckpointStore,
  type SessionStore,
  rewind,
  undoRewind,
  type CheckpointStoreOptions,
  type FileStatesPayload,
  type RewindConflict,
} from "../../../src/index.js";
import { openStore, tempDir } from "../../helpers/fixture.js";

let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let id: string;

async function open(options: CheckpointStoreOptions = {}): Promise<void> {
  const base = await realpath(await tempDir("agent-tape-command-after-"));
  workspace = join(base, "ws");
  await mkdir(join(workspace, "src"), { recursive: true });
  await writeFile(join(workspace, "src/kept.ts"), "kept\n");
  store = openStore({ root: join(base, "sessions") });
  checkpoints = new CheckpointStore(store, options);
  id = (await store.create({ workspace })).id;
  await store.append(id, { type: "message", payload: { role: "user", content: "generate f" } });
  // The first scan of a session reads the whole tree: done here, so the commands below are ordinary ones.
  await checkpoints.beforeCommand(id, { tool: "warm" }).then((c) => checkpoints.afterCommand(c));
}

const sh = (command: string) => execFileSync("sh", ["-c", command], { cwd: workspace, stdio: "ignore" });
const read = (path: string) => readFile(join(workspace, path), "utf8");
const lastSequence = async () => (await store.get(id))!.lastSequence;

async function conflictOf(promise: Promise<unknown>): Promise<{ code?: string; conflicts?: RewindConflict[] }> {
  return promise.then(
    () => ({}),
    (error: { code?: string; conflicts?: RewindConflict[] }) => error,
  );
}

describe("a shell command's after-state: a later rewind sees a hand edit of a file the command wrote", () => {
  beforeEach(() => open());

  it("shell writes f, the user edits f by hand: the rewind refuses with REWIND_CONFLICT naming f", async () => {
    const target = await lastSequence();
    await checkpoints.aroundCommand(id, { tool: "bash", callId: "c1" }, () => sh("echo generated > f"));
    await writeFile(join(workspace, "f"), "generated, then fixed by hand\n");
    const lastBefore = await lastSequence();

    const error = await conflictOf(rewind(store, id, { toSequence: target }));

    expect(error.code).toBe("REWIND_CONFLICT");
    expect(error.conflicts?.map((c) => [c.path, c.change])).toEqual([["f", "modified"]]);
    expect(await read("f")).toBe("generated, then fixed by hand\n");
    expect(await lastSequence()).toBe(lastBefore);
  });

  it("without a hand edit the same rewind goes ahead and removes what the command made", async () => {
    const target = await lastSequence();
    await checkpoints.aroundCommand(id, { tool: "bash" }, () => sh("echo generated > f && echo more >> src/kept.ts"));
    const report = await rewind(store, id, { toSequence: target });
    expect(report.conflicts).toBeUndefined();
    expect(report.changes.map((c) => [c.path, c.action])).toEqual([
      ["f", "delete"],
      ["src/kept.ts", "restore"],
    ]);
    expect(await read("src/kept.ts")).toBe("kept\n");
  });

  it("a file the command deleted and the user put back by hand is a conflict (created)", async () => {
    const target = await lastSequence();
    await checkpoints.aroundCommand(id, { tool: "bash" }, () => sh("rm src/kept.ts && echo x > g"));
    await writeFile(join(workspace, "src/kept.ts"), "typed again by hand\n");
    const error = await conflictOf(rewind(store, id, { toSequence: target }));
    expect(error.conflicts?.map((c) => [c.path, c.change])).toEqual([["src/kept.ts", "created"]]);
  });

  // The index does not track ignored paths, so the folder's after-state does not list them: a file it
  // never recorded there is no sign of a hand edit (it was a false "created" conflict on x.log).
  it("a folder the command made, with an ignored file in it, rewinds with no conflict", async () => {
    await writeFile(join(workspace, ".gitignore"), "*.log\n");
    await checkpoints.beforeCommand(id, { tool: "warm" }).then((c) => checkpoints.afterCommand(c));
    const target = await lastSequence();
    await checkpoints.aroundCommand(id, { tool: "bash" }, () =>
      sh("mkdir gen && echo a > gen/a && echo l > gen/x.log"),
    );
    const report = await rewind(store, id, { toSequence: target });
    expect(report.conflicts).toBeUndefined();
    expect(report.changes.map((c) => [c.path, c.action])).toEqual([
      ["gen", "delete"],
      ["gen/a", "delete"],
    ]);
  });

  it("a file made by hand inside a folder the command made is not checked: its bytes go into the undo", async () => {
    const target = await lastSequence();
    await checkpoints.aroundCommand(id, { tool: "bash" }, () => sh("mkdir gen && echo a > gen/a"));
    await writeFile(join(workspace, "gen/by-hand.txt"), "mine\n");
    const report = await rewind(store, id, { toSequence: target });
    expect(report.conflicts).toBeUndefined();
    await undoRewind(store, id);
    expect(await read("gen/by-hand.txt")).toBe("mine\n");
  });

  it("is one session_file_states event after the checkpoint: each changed path as the command left it", async () => {
    await checkpoints.aroundCommand(id, { tool: "bash", callId: "c1" }, () =>
      sh("echo generated > f && rm src/kept.ts && mkdir d && chmod 700 d && ln -s f l"),
    );
    const [checkpoint, states] = (await store.readAll(id)).slice(-2);
    expect(checkpoint!.type).toBe("session_checkpoint");
    expect(states!.type).toBe("session_file_states");
    expect(states!.sequence).toBe(checkpoint!.sequence + 1);
    const payload = states!.payload as FileStatesPayload;
    expect(payload).toMatchObject({ tool: "bash", callId: "c1", workspace });
    expect(payload.files).toEqual([
      { path: "d", kind: "directory", mode: 0o700, complete: false },
      { path: "f", kind: "file", sha256: expect.stringMatching(/^[0-9a-f]{64}$/), mode: expect.any(Number) },
      { path: "l", kind: "symlink", target: "f" },
      { path: "src/kept.ts", kind: "absent" },
    ]);
  });
});

describe("afterState: false", () => {
  beforeEach(() => open({ afterState: false }));

  it("records no after-state for a command, so the rewind does not check (as before after-states)", async () => {
    const target = await lastSequence();
    await checkpoints.aroundCommand(id, { tool: "bash" }, () => sh("echo generated > f"));
    expect((await store.readAll(id)).at(-1)!.type).toBe("session_checkpoint");
    await writeFile(join(workspace, "f"), "by hand\n");
    const report = await rewind(store, id, { toSequence: target });
    expect(report.conflicts).toBeUndefined();
  });
});
