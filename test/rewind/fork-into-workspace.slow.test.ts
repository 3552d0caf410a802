import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readdir, readFile, realpath, symlink, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CheckpointStore,
  type SessionStore,
  forkIntoWorkspace,
  isAgentTapeError,
  rewind,
  undoRewind,
  verify,
  type ForkPayload,
} from "../../src/index.js";
import { workspaceTree } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { editLogLines, editSessionRecord } from "../helpers/store-backends.js";

// Fork into its own folder (docs/ARCHITECTURE.md, "Forks"): the new folder holds the tracked
// files as they were at the fork point, and the two sessions' rewinds and undos each stay in their own folder.

async function setup() {
  const base = await realpath(await tempDir("agent-tape-fork-ws-"));
  const workspace = join(base, "ws");
  await mkdir(workspace);
  const store = openStore({ root: join(base, "sessions") });
  const checkpoints = new CheckpointStore(store);
  const { id } = await store.create({ workspace, title: "parent" });
  const say = (content: string) => store.append(id, { type: "message", payload: { role: "user", content } });
  return { base, workspace, store, checkpoints, id, say };
}

const BINARY = Buffer.concat([Buffer.from([0, 1, 2, 255, 0, 10, 13]), randomBytes(70_000)]);

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe("forkIntoWorkspace without a workspace index (the files the tape names)", () => {
  async function story() {
    const s = await setup();
    const w = (path: string) => join(s.workspace, path);
    await s.say("start");
    // One tool makes every kind of entry the tape can name: text, binary, an executable, a link, an empty folder.
    await s.checkpoints.around(
      s.id,
      { tool: "write", paths: ["text.txt", "bin.dat", "run.sh", "link", "empty", "gone.txt", "nested"] },
      async () => {
        await writeFile(w("text.txt"), "version 1\n");
        await writeFile(w("bin.dat"), BINARY);
        await writeFile(w("run.sh"), "#!/bin/sh\necho hi\n");
        await chmod(w("run.sh"), 0o755);
        await symlink("text.txt", w("link"));
        await mkdir(w("empty"));
        await writeFile(w("gone.txt"), "deleted after the fork point\n");
        await mkdir(w("nested/deep"), { recursive: true });
        await writeFile(w("nested/deep/f.txt"), "deep\n");
      },
    );
    const point = (await s.say("fork here")).sequence;
    const atPoint = await workspaceTree(s.workspace);
    // After the fork point: an edit, a delete, a new file, a mode change, a relinked link, a filled folder.
    await s.checkpoints.around(
      s.id,
      { tool: "edit", paths: ["text.txt", "gone.txt", "new.txt", "run.sh", "link", "empty/x"] },
      async () => {
        await writeFile(w("text.txt"), "version 2\n");
        await unlink(w("gone.txt"));
        await writeFile(w("new.txt"), "created after the fork point\n");
        await chmod(w("run.sh"), 0o644);
        await unlink(w("link"));
        await symlink("bin.dat", w("link"));
        await writeFile(w("empty/x"), "no longer empty\n");
      },
    );
    await s.say("later");
    // A file no capture ever named is not tracked: it is not copied.
    await writeFile(w("untracked.txt"), "never captured\n");
    return { ...s, point, atPoint };
  }

  it("makes every tracked path as it was at the fork point: bytes, modes, links, empty folders", async () => {
    const s = await story();
    const child = join(s.base, "child");
    const report = await forkIntoWorkspace(s.store, s.id, { atSequence: s.point, workspace: child });
    expect(await workspaceTree(child)).toEqual(s.atPoint);
    expect(await readFile(join(child, "bin.dat"))).toEqual(BINARY);
    expect(report).toMatchObject({ workspace: child, files: 5, symlinks: 1, folders: 3, skipped: [] });
    expect(report.session).toMatchObject({ workspace: child, parent: { id: s.id, atSequence: s.point } });
    expect(report.bytes).toBe(10 + BINARY.length + 18 + 29 + 5);
  });

  it("forks the whole tape by default: the files as they are now, the untracked one left out", async () => {
    const s = await story();
    const child = join(s.base, "child");
    await forkIntoWorkspace(s.store, s.id, { workspace: child });
    const { "untracked.txt": _untracked, ...tracked } = await workspaceTree(s.workspace);
    expect(await workspaceTree(child)).toEqual(tracked);
  });

  it("the fork's tape records the new folder: session.json, the fork event, every copied checkpoint", async () => {
    const s = await story();
    const child = join(s.base, "child");
    const { session } = await forkIntoWorkspace(s.store, s.id, { atSequence: s.point, workspace: child });
    expect((await s.store.get(session.id))?.workspace).toBe(child);
    const events = await s.store.readAll(session.id);
    const fork = events.at(-1)!;
    expect(fork.type).toBe("session_fork");
    expect(fork.payload as ForkPayload).toEqual({ parentId: s.id, atSequence: s.point, workspace: child });
    const checkpoints = events.filter((e) => e.type === "session_checkpoint" || e.type === "session_file_states");
    expect(checkpoints.length).toBeGreaterThan(0);
    for (const event of checkpoints) expect((event.payload as { workspace: string }).workspace).toBe(child);
    // The parent's tape is as it was, and both verify clean (the fork's copied checkpoints have their blobs).
    for (const event of await s.store.readAll(s.id, { types: ["session_checkpoint"] }))
      expect(event.payload.workspace).toBe(s.workspace);
    expect((await verify(s.store, session.id)).ok).toBe(true);
    expect((await verify(s.store, s.id)).ok).toBe(true);
  });

  it("a rewind of the fork to before the fork point writes in the fork's folder only", async () => {
    const s = await story();
    const child = join(s.base, "child");
    const { session } = await forkIntoWorkspace(s.store, s.id, { atSequence: s.point, workspace: child });
    const parentNow = await workspaceTree(s.workspace);
    await rewind(s.store, session.id, { toSequence: 1 }); // before the first tool: none of its files existed
    expect(await workspaceTree(child)).toEqual({});
    expect(await workspaceTree(s.workspace)).toEqual(parentNow);
    await undoRewind(s.store, session.id);
    expect(await workspaceTree(child)).toEqual(s.atPoint);
    expect(await workspaceTree(s.workspace)).toEqual(parentNow);
  });
});

/** A project before the session: the index tracks it all, minus what .gitignore leaves out. */
const PROJECT = [
  "mkdir -p src lib node_modules/pkg",
  "printf 'a = 1\\nb = 2\\n' > src/app.txt",
  "printf 'util\\n' > lib/util.txt",
  "printf 'node_modules/\\n*.log\\n' > .gitignore",
  "echo dep > node_modules/pkg/index.js",
  "echo x > debug.log",
].join(" && ");

describe("forkIntoWorkspace with a workspace index (shell commands)", () => {
  async function shellStory() {
    const s = await setup();
    const sh = (command: string, cwd = s.workspace) => execFileSync("sh", ["-c", command], { cwd, stdio: "ignore" });
    sh(PROJECT);
    await s.say("start");
    const command = (line: string) => s.checkpoints.aroundCommand(s.id, { tool: "bash" }, async () => sh(line));
    await command("sed -i 's/a = 1/a = 10/' src/app.txt && mkdir -p gen/empty/deep && chmod +x lib/util.txt");
    await command("ln -s src/app.txt app-link && printf '\\000\\001\\377' > src/bin.dat && mv lib/util.txt lib/u.txt");
    const point = (await s.say("fork here")).sequence;
    const atPoint = await workspaceTree(s.workspace);
    await command("rm -rf gen && sed -i 's/b = 2/b = 20/' src/app.txt && mkdir -p made/after && echo n > made/after/n");
    await command("mv src renamed && rm app-link && chmod 600 lib/u.txt && npm_fake=1 echo more >> node_modules/x");
    await s.say("later");
    return { ...s, sh, command, point, atPoint };
  }

  const leaveOutIgnored = (tree: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(tree).filter(([path]) => !path.startsWith("node_modules") && !path.endsWith(".log")),
    );

  it("an earlier point: the tracked tree byte for byte as a copy taken then, ignored paths left out", async () => {
    const s = await shellStory();
    const child = join(s.base, "child");
    const report = await forkIntoWorkspace(s.store, s.id, { atSequence: s.point, workspace: child });
    expect(await workspaceTree(child)).toEqual(leaveOutIgnored(s.atPoint));
    expect(await readdir(child)).not.toContain("node_modules");
    expect(report.skipped).toEqual([]);
  });

  it("two lines side by side: edits, shell commands, rewinds and undos each touch their own folder only", async () => {
    const s = await shellStory();
    const child = join(s.base, "child");
    const { session } = await forkIntoWorkspace(s.store, s.id, { atSequence: s.point, workspace: child });
    const inChild = (line: string) =>
      s.checkpoints.aroundCommand(session.id, { tool: "bash" }, async () => s.sh(line, child));

    // The fork goes its own way.
    const childStart = (await s.store.get(session.id))!.lastSequence;
    await inChild("sed -i 's/a = 10/a = 99/' src/app.txt && rm -rf gen && echo fork > fork-only.txt");
    await s.checkpoints.around(session.id, { tool: "edit", paths: ["lib/u.txt"] }, () =>
      writeFile(join(child, "lib/u.txt"), "edited in the fork\n"),
    );
    const childAfter = await workspaceTree(child);
    // The parent goes on too.
    await s.command("echo parent > parent-only.txt && rm -rf made");
    const parentAfter = await workspaceTree(s.workspace);
    expect(childAfter).not.toHaveProperty("parent-only.txt");
    expect(parentAfter).not.toHaveProperty("fork-only.txt");

    // A rewind of the fork, to its own start: only the fork's folder changes.
    await rewind(s.store, session.id, { toSequence: childStart });
    expect(await workspaceTree(child)).toEqual(leaveOutIgnored(s.atPoint));
    expect(await workspaceTree(s.workspace)).toEqual(parentAfter);
    // A rewind of the parent to the fork point: only the parent's folder changes.
    await rewind(s.store, s.id, { toSequence: s.point });
    const parentRewound = await workspaceTree(s.workspace);
    expect(leaveOutIgnored(parentRewound)).toEqual(leaveOutIgnored(s.atPoint));
    expect(parentRewound).toHaveProperty("node_modules/x"); // ignored: a rewind leaves it as it is
    expect(await workspaceTree(child)).toEqual(leaveOutIgnored(s.atPoint));
    // Undo both: each folder gets back its own later state.
    await undoRewind(s.store, session.id);
    expect(await workspaceTree(child)).toEqual(childAfter);
    await undoRewind(s.store, s.id);
    expect(await workspaceTree(s.workspace)).toEqual(parentAfter);
    expect(await workspaceTree(child)).toEqual(childAfter);

    // A rewind of the fork to before the fork point (before the first command) works in the fork's folder.
    const parentBefore = await workspaceTree(s.workspace);
    await rewind(s.store, session.id, { toSequence: 1 });
    const {
      "node_modules/pkg/index.js": _a,
      "node_modules/pkg": _b,
      node_modules: _c,
      "debug.log": _d,
      ...start
    } = await projectBeforeSession();
    expect(await workspaceTree(child)).toEqual(start);
    expect(await workspaceTree(s.workspace)).toEqual(parentBefore);
  });

  /** The project as the story's first shell line made it, in a scratch folder. */
  async function projectBeforeSession(): Promise<Record<string, string>> {
    const scratch = join(await realpath(await tempDir("agent-tape-fork-start-")), "ws");
    await mkdir(scratch);
    execFileSync("sh", ["-c", PROJECT], { cwd: scratch, stdio: "ignore" });
    return workspaceTree(scratch);
  }
});

describe("forkIntoWorkspace refuses, writing nothing and making no session", () => {
  async function withFiles() {
    const s = await setup();
    await writeFile(join(s.workspace, "a.txt"), "a\n");
    await s.checkpoints.capture(s.id, { tool: "write", paths: ["a.txt"] });
    await s.say("done");
    return s;
  }
  const sessionCount = async (store: SessionStore) => (await store.list()).length;

  it("a folder that is not empty: WORKSPACE_NOT_EMPTY, its content untouched", async () => {
    const s = await withFiles();
    const target = join(s.base, "busy");
    await mkdir(target);
    await writeFile(join(target, "mine.txt"), "keep me\n");
    const error = await rejection(forkIntoWorkspace(s.store, s.id, { workspace: target }));
    expect(isAgentTapeError(error, "WORKSPACE_NOT_EMPTY")).toBe(true);
    expect((error as Error).message).toContain("mine.txt");
    expect(await workspaceTree(target)).toEqual({ "mine.txt": 'file 644 "keep me\\n"' });
    expect(await sessionCount(s.store)).toBe(1);
  });

  it("an empty folder is used as it is; a missing one is made with its parents", async () => {
    const s = await withFiles();
    const empty = join(s.base, "empty");
    await mkdir(empty);
    await forkIntoWorkspace(s.store, s.id, { workspace: empty });
    expect(await readdir(empty)).toEqual(["a.txt"]);
    const deep = join(s.base, "forks", "try-2");
    await forkIntoWorkspace(s.store, s.id, { workspace: deep });
    expect(await readdir(deep)).toEqual(["a.txt"]);
  });

  it("a folder inside the parent's workspace, or holding it: refused, the folder it made removed", async () => {
    const s = await withFiles();
    const inside = rejection(forkIntoWorkspace(s.store, s.id, { workspace: join(s.workspace, "sub") }));
    expect(isAgentTapeError(await inside, "INVALID_ARGUMENT")).toBe(true);
    expect(await readdir(s.workspace)).toEqual(["a.txt"]);
    const above = rejection(forkIntoWorkspace(s.store, s.id, { workspace: s.base }));
    expect(isAgentTapeError(await above, "WORKSPACE_NOT_EMPTY")).toBe(true);
    expect(await sessionCount(s.store)).toBe(1);
  });

  it("a file, a parent without workspace, a bad sequence, a taken id: typed errors, nothing left behind", async () => {
    const s = await withFiles();
    const file = join(s.base, "file");
    await writeFile(file, "x");
    expect(
      isAgentTapeError(await rejection(forkIntoWorkspace(s.store, s.id, { workspace: file })), "INVALID_ARGUMENT"),
    ).toBe(true);
    const bare = await s.store.create({ title: "no workspace" });
    const target = join(s.base, "target");
    const noWorkspace = await rejection(forkIntoWorkspace(s.store, bare.id, { workspace: target }));
    expect(isAgentTapeError(noWorkspace, "INVALID_ARGUMENT")).toBe(true);
    const tooFar = await rejection(forkIntoWorkspace(s.store, s.id, { workspace: target, atSequence: 99 }));
    expect(isAgentTapeError(tooFar, "SEQUENCE_OUT_OF_RANGE")).toBe(true);
    const taken = await rejection(forkIntoWorkspace(s.store, s.id, { workspace: target, id: bare.id }));
    expect(isAgentTapeError(taken, "SESSION_EXISTS")).toBe(true);
    const missing = await rejection(forkIntoWorkspace(s.store, "no-such-session", { workspace: target }));
    expect(isAgentTapeError(missing, "SESSION_NOT_FOUND")).toBe(true);
    // The store's folder ("sessions") is there on fs only: on PostgreSQL the sessions are rows.
    expect((await readdir(s.base)).filter((name) => name !== "sessions")).toEqual(["file", "ws"]);
    expect(await sessionCount(s.store)).toBe(2);
  });

  it("a session.json edited to name another folder: WORKSPACE_MISMATCH, nothing read from that folder", async () => {
    const s = await withFiles();
    const elsewhere = join(s.base, "elsewhere");
    await mkdir(elsewhere);
    await writeFile(join(elsewhere, "a.txt"), "secret\n");
    await editSessionRecord(join(s.base, "sessions"), s.id, (meta) => ({ ...meta, workspace: elsewhere }));
    const reopened = openStore({ root: join(s.base, "sessions") });
    const error = await rejection(forkIntoWorkspace(reopened, s.id, { workspace: join(s.base, "child") }));
    expect(isAgentTapeError(error, "WORKSPACE_MISMATCH")).toBe(true);
    expect(await readdir(s.base)).not.toContain("child");
  });
});

describe("forkIntoWorkspace never goes outside the two folders", () => {
  it("a link leading outside is copied as a link, and nothing is written through it", async () => {
    const s = await setup();
    const outside = join(s.base, "outside");
    await mkdir(outside);
    await writeFile(join(outside, "secret.txt"), "outside\n");
    await symlink(outside, join(s.workspace, "out"));
    await symlink("/etc/passwd", join(s.workspace, "abs"));
    await writeFile(join(s.workspace, "in.txt"), "in\n");
    // The tape names paths through the link (a tampered or careless tool): they are left out, not followed.
    await s.checkpoints.capture(s.id, { tool: "write", paths: ["out", "abs", "in.txt", "out/secret.txt"] });
    const child = join(s.base, "child");
    const report = await forkIntoWorkspace(s.store, s.id, { workspace: child });
    expect(await workspaceTree(child)).toEqual({
      abs: "link -> /etc/passwd",
      "in.txt": 'file 644 "in\\n"',
      out: `link -> ${outside}`,
    });
    expect(await readdir(outside)).toEqual(["secret.txt"]);
    expect(report.skipped).toEqual([{ path: "out/secret.txt", reason: "outside_workspace" }]);
  });

  it("a tape path that leads outside is skipped and reported, never read", async () => {
    const s = await setup();
    await writeFile(join(s.workspace, "a.txt"), "a\n");
    await s.checkpoints.capture(s.id, { tool: "write", paths: ["a.txt"] });
    // A hand-edited tape naming ../ paths (in its table of paths: docs/format.md, "Payloads as rows").
    await editLogLines(join(s.base, "sessions"), s.id, (line) =>
      line.replace('"paths":["a.txt"]', '"paths":["../outside.txt"]'),
    );
    await writeFile(join(s.base, "outside.txt"), "outside\n");
    const reopened = openStore({ root: join(s.base, "sessions") });
    const report = await forkIntoWorkspace(reopened, s.id, { workspace: join(s.base, "child") });
    expect(await readdir(join(s.base, "child"))).toEqual([]);
    expect(report.skipped).toEqual([{ path: "../outside.txt", reason: "outside_workspace" }]);
  });

  it("a snapshot whose blob is gone: the parent's current file is copied and the path reported", async () => {
    const s = await setup();
    await writeFile(join(s.workspace, "a.txt"), "a1\n");
    await s.say("start");
    const point = (await s.say("point")).sequence;
    const checkpoint = await s.checkpoints.capture(s.id, { tool: "edit", paths: ["a.txt"] });
    await writeFile(join(s.workspace, "a.txt"), "a2\n");
    const blob = (checkpoint!.payload.files[0] as { blob: string }).blob;
    const locked = await s.store.backend.lock(s.id); // lost as a deleter loses it, wherever it was kept
    await locked.deleteBlob(blob);
    await locked.release();
    const child = join(s.base, "child");
    const report = await forkIntoWorkspace(s.store, s.id, { atSequence: point, workspace: child });
    expect(await readFile(join(child, "a.txt"), "utf8")).toBe("a2\n");
    expect(report.skipped).toEqual([{ path: "a.txt", reason: "blob_missing" }]);
  });
});
