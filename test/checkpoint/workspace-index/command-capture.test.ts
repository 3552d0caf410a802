import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, realpath, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import {
  CheckpointStore,
  type SessionStore,
  isAgentTapeError,
  rewind,
  type CheckpointPayload,
  type CheckpointStoreOptions,
  type FileSnapshot,
} from "../../../src/index.js";
import { treeOf } from "../../helpers/workspace-tree.js";
import { openStore, tempDir } from "../../helpers/fixture.js";
import { allOwnerless } from "../../helpers/ownerless.js";

let base: string;
let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let sessionId: string;

async function open(options: CheckpointStoreOptions = {}, root = join(base, "sessions")): Promise<void> {
  store = openStore({ root });
  checkpoints = new CheckpointStore(store, options);
  sessionId = (await store.create({ workspace })).id;
  await store.append(sessionId, { type: "message", payload: { role: "user", content: "start" } });
}

beforeEach(async () => {
  base = await realpath(await tempDir("agent-tape-command-"));
  workspace = join(base, "ws");
  await mkdir(join(workspace, "dir/deep"), { recursive: true });
  await writeFile(join(workspace, "a.txt"), "hello\n");
  await writeFile(join(workspace, "dir/one.txt"), "one\n");
  await writeFile(join(workspace, "dir/deep/two.txt"), "two\n");
});

const sh = (command: string) => execFileSync("sh", ["-c", command], { cwd: workspace, stdio: "ignore" });
const put = (path: string, content: string) => writeFile(join(workspace, path), content);
const lastSequence = async () => (await store.get(sessionId))!.lastSequence;
async function lastFiles(): Promise<FileSnapshot[]> {
  // The checkpoint is followed by its after-state (command-after-state.test.ts): look past it.
  const last = (await store.readAll(sessionId)).filter((e) => e.type !== "session_file_states").at(-1)!;
  expect(last.type).toBe("session_checkpoint");
  return (last.payload as CheckpointPayload).files;
}

describe("aroundCommand records what a shell command changed", () => {
  beforeEach(() => open());

  it("created paths absent, changed and deleted ones with their before-state, folders with their mode", async () => {
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () =>
      sh("rm -rf dir && chmod 600 a.txt && ln -s a.txt l && mkdir -p n/m && echo x > n/m/f"),
    );
    expect((await lastFiles()).map((f) => [f.path, f.kind, "mode" in f ? f.mode.toString(8) : ""])).toEqual([
      ["a.txt", "blob", "644"],
      ["dir", "directory", "755"],
      ["dir/deep", "directory", "755"],
      ["dir/deep/two.txt", "blob", "644"],
      ["dir/one.txt", "blob", "644"],
      ["l", "absent", ""],
      ["n", "absent", ""],
      ["n/m", "absent", ""],
      ["n/m/f", "absent", ""],
    ]);
  });

  it("a link pointed elsewhere is recorded with its old target", async () => {
    sh("ln -s a.txt link");
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("ln -sfn dir link"));
    expect(allOwnerless(await lastFiles())).toEqual([{ path: "link", kind: "symlink", target: "a.txt" }]);
  });

  it("a command that changes nothing tracked appends nothing", async () => {
    const before = await lastSequence();
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("true; cat a.txt > /dev/null"));
    expect(await lastSequence()).toBe(before);
  });

  // Today's gap (README advice "capture the folder"): after a rewind new.txt was still there,
  // holding the shell's "shell\n" (the edit's snapshot), and gen/g.txt was not deleted.
  it("a file a command created, then a tool edited, is absent after a rewind to before the command", async () => {
    const target = await lastSequence();
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () =>
      sh("mkdir -p gen && echo shell > new.txt && echo g > gen/g.txt"),
    );
    await checkpoints.capture(sessionId, { tool: "edit", paths: ["new.txt"] });
    await put("new.txt", "edited\n");
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(existsSync(join(workspace, "new.txt"))).toBe(false);
    expect(existsSync(join(workspace, "gen"))).toBe(false);
  });

  // Two writes in one timestamp tick are built directly in racy.test.ts; here the mtime is put back
  // by hand, and the ctime is what tells.
  it("a file rewritten twice with the same size and its mtime put back each time is seen changed", async () => {
    const file = join(workspace, "a.txt");
    const { mtime } = await stat(file);
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, async () => {
      await put("a.txt", "first\n");
      await utimes(file, mtime, mtime);
    });
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, async () => {
      await put("a.txt", "again\n"); // same size as "first\n"
      await utimes(file, mtime, mtime);
    });
    const files = await lastFiles();
    expect(allOwnerless(files)).toEqual([
      { path: "a.txt", kind: "blob", blob: expect.any(String), bytes: 6, mode: 0o644 },
    ]);
    expect((await checkpoints.readBlob(sessionId, (files[0] as { blob: string }).blob)).toString()).toBe("first\n");
  });

  it("a file whose mtime was put back (touch -r) after an edit of the same size is seen changed", async () => {
    await put("ref", "");
    sh("touch -d '2001-01-01' ref && touch -r ref a.txt");
    await checkpoints.beforeCommand(sessionId, { tool: "warm" }).then((c) => checkpoints.afterCommand(c));
    // Old timestamps are not racy: only the ctime can tell this change.
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () =>
      sh("printf 'HELLO\\n' > a.txt && touch -r ref a.txt"),
    );
    expect((await lastFiles()).map((f) => f.path)).toEqual(["a.txt"]);
  });

  it("a command that throws still has its changes recorded, and its error is thrown", async () => {
    const failure = new Error("exit 1");
    await expect(
      checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => {
        sh("echo half > half.txt");
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect((await lastFiles()).map((f) => [f.path, f.kind])).toEqual([["half.txt", "absent"]]);
  });

  it("an aborted command is awaited, its changes recorded, and the abort reason thrown", async () => {
    const controller = new AbortController();
    const reason = new Error("user pressed stop");
    await expect(
      checkpoints.aroundCommand(sessionId, { tool: "bash", signal: controller.signal }, async (signal) => {
        controller.abort(reason);
        expect(signal?.aborted).toBe(true);
        await new Promise((r) => setTimeout(r, 20)); // the command takes a moment to stop
        sh("echo late > late.txt");
      }),
    ).rejects.toBe(reason);
    expect((await lastFiles()).map((f) => [f.path, f.kind])).toEqual([["late.txt", "absent"]]);
  });

  it("the two-phase form records the same as the around form, with the callId", async () => {
    const command = await checkpoints.beforeCommand(sessionId, { tool: "bash", callId: "call-7" });
    sh("mv dir moved");
    const event = await checkpoints.afterCommand(command);
    expect(event?.payload.callId).toBe("call-7");
    expect(event?.payload.files.map((f) => [f.path, f.kind])).toEqual([
      ["dir", "directory"],
      ["dir/deep", "directory"],
      ["dir/deep/two.txt", "blob"],
      ["dir/one.txt", "blob"],
      ["moved", "absent"],
      ["moved/deep", "absent"],
      ["moved/deep/two.txt", "absent"],
      ["moved/one.txt", "absent"],
    ]);
  });

  it("edits made between commands are picked up by the next before-scan, so a rewind brings them back", async () => {
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("echo 1 > a.txt"));
    await put("a.txt", "edited outside the session\n"); // an editor, not a captured tool
    const target = await lastSequence();
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("rm a.txt"));
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("edited outside the session\n");
  });
});

describe("the workspace index", () => {
  it("is a reference root: a rewind's prune keeps the blobs of unchanged tracked files", async () => {
    await open();
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("echo b > b.txt"));
    const target = await lastSequence();
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("echo c > c.txt"));
    await rewind(store, sessionId, { toSequence: target }); // cuts the log and prunes
    // The next command deletes a file no checkpoint ever stored: its bytes must still be there.
    const next = await lastSequence();
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("rm dir/deep/two.txt"));
    await rewind(store, sessionId, { toSequence: next, mode: "files" });
    expect(await readFile(join(workspace, "dir/deep/two.txt"), "utf8")).toBe("two\n");
  });

  it("survives a new store: a later command in another process's store rewinds exactly", async () => {
    await open();
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("echo 1 >> a.txt"));
    await store.close();
    store = openStore({ root: join(base, "sessions") });
    checkpoints = new CheckpointStore(store);
    const target = await lastSequence();
    const tree = await treeOf(workspace);
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("rm -rf dir && echo 2 >> a.txt"));
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(await treeOf(workspace)).toEqual(tree);
  });

  it("leaves out the session store when it lies inside the workspace", async () => {
    await open({}, join(workspace, ".agent-tape"));
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("echo x > x.txt"));
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("echo y > y.txt"));
    expect((await lastFiles()).map((f) => f.path)).toEqual(["y.txt"]);
  });
});

describe("ignore rules like git's", () => {
  beforeEach(async () => {
    await mkdir(join(workspace, "node_modules/pkg"), { recursive: true });
    await put("node_modules/pkg/index.js", "module\n");
    await put(".gitignore", "node_modules/\n*.log\nbuild\n");
    await mkdir(join(workspace, "sub"), { recursive: true });
    await put("sub/.gitignore", "!keep.log\nsecret.txt\n");
    await put("sub/keep.log", "kept\n");
    await put("sub/drop.log", "dropped\n");
    await put("sub/secret.txt", "s\n");
    await mkdir(join(workspace, ".git"), { recursive: true });
    await put(".git/HEAD", "ref: refs/heads/main\n");
  });

  it("nested .gitignore, negation, folder rule, .git, own patterns: ignored paths untouched by rewind", async () => {
    await open({ workspaceIndex: { ignore: ["dir/deep/"] } });
    const target = await lastSequence();
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () =>
      sh(
        "echo changed > node_modules/pkg/index.js && echo new > node_modules/new.js && " +
          "echo l > sub/drop.log && echo l2 > sub/keep.log && echo s2 > sub/secret.txt && " +
          "mkdir build && echo b > build/out && echo h > .git/HEAD && echo t > dir/deep/two.txt && echo a > a.txt",
      ),
    );
    expect((await lastFiles()).map((f) => f.path)).toEqual(["a.txt", "sub/keep.log"]);
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("hello\n");
    expect(await readFile(join(workspace, "sub/keep.log"), "utf8")).toBe("kept\n");
    // Ignored: left as the command made them.
    expect(await readFile(join(workspace, "node_modules/pkg/index.js"), "utf8")).toBe("changed\n");
    expect(await readFile(join(workspace, "node_modules/new.js"), "utf8")).toBe("new\n");
    expect(await readFile(join(workspace, "sub/drop.log"), "utf8")).toBe("l\n");
    expect(await readFile(join(workspace, "sub/secret.txt"), "utf8")).toBe("s2\n");
    expect(await readFile(join(workspace, "build/out"), "utf8")).toBe("b\n");
    expect(await readFile(join(workspace, ".git/HEAD"), "utf8")).toBe("h\n");
    expect(await readFile(join(workspace, "dir/deep/two.txt"), "utf8")).toBe("t\n");
  });
});

describe("limits that protect the user's disk", () => {
  it("a workspace over maxFiles is refused before anything is stored, with the counts", async () => {
    for (let i = 0; i < 30; i++) await put(`f${i}.txt`, `${i}\n`);
    await open({ workspaceIndex: { maxFiles: 20 } });
    const records = await readdir(join(base, "sessions", sessionId)).catch(() => []);
    const error = await checkpoints.beforeCommand(sessionId, { tool: "bash" }).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "WORKSPACE_TOO_LARGE")).toBe(true);
    expect((error as Error).message).toMatch(/more than maxFiles 20 entries \(counted 21 before stopping\)/);
    expect((error as Error).message).toContain("nothing was stored");
    expect(existsSync(join(base, "sessions", sessionId, "blobs"))).toBe(false);
    expect(await readdir(join(base, "sessions", sessionId))).toEqual(records);
  });

  it("a workspace over maxBytes is refused likewise", async () => {
    await put("big.bin", "x".repeat(5000));
    await open({ workspaceIndex: { maxBytes: 4096 } });
    const error = await checkpoints.beforeCommand(sessionId, { tool: "bash" }).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "WORKSPACE_TOO_LARGE")).toBe(true);
    expect((error as Error).message).toMatch(/more than maxBytes 4096 bytes \(counted \d+ bytes in \d+ entries/);
    expect(existsSync(join(base, "sessions", sessionId, "blobs"))).toBe(false);
  });

  it("a file over maxFileBytes is recorded skipped and a rewind reports it", async () => {
    await put("big.bin", "x".repeat(2000));
    await open({ maxFileBytes: 1000 });
    const target = await lastSequence();
    await checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh("echo y >> big.bin"));
    expect(await lastFiles()).toEqual([
      { path: "big.bin", kind: "skipped", reason: "too_large", detail: "2000 bytes > maxFileBytes" },
    ]);
    const report = await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(report.skipped).toEqual(["big.bin"]);
  });
});
