import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, mkdir, realpath, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import type { FileSnapshot } from "../../src/core/events.js";
import { forEachLimited } from "../../src/core/bounded-concurrency.js";
import { snapshotPaths, type SnapshotLimits } from "../../src/checkpoint/snapshot.js";
import { tempDir } from "../helpers/fixture.js";
import { allOwnerless } from "../helpers/ownerless.js";

let workspace: string;
let outside: string;
beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-snapshot-"));
  workspace = join(base, "ws");
  outside = join(base, "outside");
  await mkdir(workspace);
  await mkdir(outside);
  await writeFile(join(outside, "secret.txt"), "OUTSIDE SECRET");
});

const roomy: SnapshotLimits = {
  maxFileBytes: 1024 * 1024,
  maxDirectoryEntries: 1000,
  maxDirectoryBytes: 10 * 1024 * 1024,
  concurrency: 4,
};

/** The snapshot, its records without owners (compared on their own below). */
async function snapshot(paths: readonly string[], limits: Partial<SnapshotLimits> = {}) {
  const taken = await snapshotPaths(workspace, workspace, paths, { ...roomy, ...limits });
  return { ...taken, files: allOwnerless(taken.files) };
}

async function put(path: string, content: string | Buffer, mode = 0o644): Promise<string> {
  const file = join(workspace, path);
  await mkdir(join(file, ".."), { recursive: true });
  await writeFile(file, content);
  await chmod(file, mode); // writeFile's mode is filtered by the umask; chmod is not
  return file;
}

const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");

function byPath(files: readonly FileSnapshot[]): Record<string, FileSnapshot> {
  return Object.fromEntries(files.map((f) => [f.path, f]));
}

describe("one record per path, of every kind", () => {
  it("records the owner and group of a file, a folder and a link", async () => {
    await put("d/a.txt", "a");
    await symlink("a.txt", join(workspace, "d/link"));
    const me = { uid: process.getuid!(), gid: process.getgid!() };
    const { files } = await snapshotPaths(workspace, workspace, ["d"], roomy);
    const owners = Object.fromEntries(files.map((f) => [f.path, "uid" in f && { uid: f.uid, gid: f.gid }]));
    expect(owners).toEqual({ d: me, "d/a.txt": me, "d/link": me });
  });

  it("records a regular file as a blob: its sha256, size and mode, with the bytes to store", async () => {
    await put("a.txt", "hello");
    const { files, blobs } = await snapshot(["a.txt"]);
    expect(files).toEqual([{ path: "a.txt", kind: "blob", blob: sha256("hello"), bytes: 5, mode: 0o644 }]);
    expect(blobs.get(sha256("hello"))?.toString()).toBe("hello");
  });

  it("records an empty file as a blob of zero bytes", async () => {
    await put("empty", "");
    const { files, blobs } = await snapshot(["empty"]);
    expect(files).toEqual([{ path: "empty", kind: "blob", blob: sha256(""), bytes: 0, mode: 0o644 }]);
    expect(blobs.get(sha256(""))?.length).toBe(0);
  });

  it("records the permission bits as they are: 0755, 0644, 0600", async () => {
    await put("run.sh", "#!/bin/sh\n", 0o755);
    await put("plain.txt", "plain", 0o644);
    await put("private.key", "key", 0o600);
    const files = byPath((await snapshot(["run.sh", "plain.txt", "private.key"])).files);
    expect(files["run.sh"]).toMatchObject({ kind: "blob", mode: 0o755 });
    expect(files["plain.txt"]).toMatchObject({ kind: "blob", mode: 0o644 });
    expect(files["private.key"]).toMatchObject({ kind: "blob", mode: 0o600 });
  });

  it("records a path that does not exist as absent, with no bytes", async () => {
    const { files, blobs } = await snapshot(["new/file.ts"]);
    expect(files).toEqual([{ path: "new/file.ts", kind: "absent" }]);
    expect(blobs.size).toBe(0);
  });

  it("records a symlink as its target text and never reads what it points to", async () => {
    await put("real.txt", "the real file");
    await symlink("real.txt", join(workspace, "link-in"));
    await symlink(join(outside, "secret.txt"), join(workspace, "link-out"));
    await symlink("nowhere/at/all", join(workspace, "dangling"));
    const { files, blobs } = await snapshot(["link-in", "link-out", "dangling"]);
    expect(files).toEqual([
      { path: "link-in", kind: "symlink", target: "real.txt" },
      { path: "link-out", kind: "symlink", target: join(outside, "secret.txt") },
      { path: "dangling", kind: "symlink", target: "nowhere/at/all" },
    ]);
    expect(blobs.size).toBe(0);
  });

  it("records a symlinked folder given with a trailing slash as the link, not the folder's contents", async () => {
    await symlink(outside, join(workspace, "out"));
    const { files, blobs } = await snapshot(["out/"]);
    expect(files).toEqual([{ path: "out", kind: "symlink", target: outside }]);
    expect(blobs.size).toBe(0);
  });

  it("records a folder as a directory with its mode, a complete listing of what is below it", async () => {
    await mkdir(join(workspace, "empty-dir"));
    await chmod(join(workspace, "empty-dir"), 0o750);
    expect((await snapshot(["empty-dir"])).files).toEqual([
      { path: "empty-dir", kind: "directory", mode: 0o750, complete: true },
    ]);
  });
});

describe("skipped, with the reason", () => {
  it("too_large: a file over maxFileBytes, its bytes never kept", async () => {
    await put("big.bin", Buffer.alloc(101, 1));
    await put("fits.bin", Buffer.alloc(100, 2));
    const { files, blobs } = await snapshot(["big.bin", "fits.bin"], { maxFileBytes: 100 });
    expect(files[0]).toMatchObject({ path: "big.bin", kind: "skipped", reason: "too_large" });
    expect(files[1]).toMatchObject({ path: "fits.bin", kind: "blob", bytes: 100 });
    expect([...blobs.keys()]).toEqual([sha256(Buffer.alloc(100, 2))]);
  });

  it("not_a_regular_file: a FIFO, which is never opened (opening one would block)", async () => {
    execFileSync("mkfifo", [join(workspace, "pipe")]);
    const { files, blobs } = await snapshot(["pipe"]);
    expect(files).toEqual([{ path: "pipe", kind: "skipped", reason: "not_a_regular_file" }]);
    expect(blobs.size).toBe(0);
  });

  // chmod 000 does not stop root, and CI runs as root: these are failures root gets too.
  it("absent, not unreadable: a path whose parent is a regular file (ENOTDIR: a folder became a file)", async () => {
    await put("file.txt", "not a folder");
    const { files } = await snapshot(["file.txt/child.txt", "file.txt/deeper/child.txt"]);
    expect(files).toEqual([
      { path: "file.txt/child.txt", kind: "absent" },
      { path: "file.txt/deeper/child.txt", kind: "absent" },
    ]);
  });

  it("unreadable: a name longer than the filesystem allows (ENAMETOOLONG), last or in the middle", async () => {
    const tooLong = "x".repeat(300);
    const { files } = await snapshot([tooLong, `${tooLong}/inner.txt`]);
    expect(files).toEqual([
      { path: tooLong, kind: "skipped", reason: "unreadable", detail: "ENAMETOOLONG" },
      { path: `${tooLong}/inner.txt`, kind: "skipped", reason: "unreadable", detail: "ENAMETOOLONG" },
    ]);
  });

  it("outside_workspace: ../, an absolute path elsewhere, a link leading out; never recorded absent", async () => {
    await symlink(outside, join(workspace, "out"));
    const { files, blobs } = await snapshot([
      "../outside/secret.txt",
      "../outside/not-there.txt",
      join(outside, "secret.txt"),
      "out/secret.txt",
      "out/not-there.txt",
    ]);
    expect(files.map((f) => [f.kind, f.kind === "skipped" && f.reason])).toEqual(
      Array(5).fill(["skipped", "outside_workspace"]),
    );
    expect(blobs.size).toBe(0);
  });

  it("over_budget: a folder past maxDirectoryEntries, what was captured before the limit kept", async () => {
    for (const name of ["a", "b", "c", "d", "e"]) await put(`many/${name}.txt`, `file ${name}`);
    const { files, blobs } = await snapshot(["many"], { maxDirectoryEntries: 3 });
    expect(files[0]).toMatchObject({ path: "many", kind: "skipped", reason: "over_budget" });
    // Entries are walked in name order, so the first three are the ones kept.
    expect(files.slice(1)).toEqual(
      ["a", "b", "c"].map((n) => ({
        path: `many/${n}.txt`,
        kind: "blob",
        blob: sha256(`file ${n}`),
        bytes: 6,
        mode: 0o644,
      })),
    );
    expect(blobs.size).toBe(3);
  });

  it("over_budget: a folder past maxDirectoryBytes, what was captured before the limit kept", async () => {
    for (const name of ["a", "b", "c"]) await put(`heavy/${name}.bin`, Buffer.alloc(40, name.charCodeAt(0)));
    const { files } = await snapshot(["heavy"], { maxDirectoryBytes: 100 });
    expect(files[0]).toMatchObject({ path: "heavy", kind: "skipped", reason: "over_budget" });
    expect(files.slice(1).map((f) => [f.path, f.kind])).toEqual([
      ["heavy/a.bin", "blob"],
      ["heavy/b.bin", "blob"],
    ]);
  });

  it("a folder exactly at its budgets is captured whole", async () => {
    for (const name of ["a", "b"]) await put(`fits/${name}.bin`, Buffer.alloc(50, 7));
    const { files } = await snapshot(["fits"], { maxDirectoryEntries: 2, maxDirectoryBytes: 100 });
    expect(files.map((f) => [f.path, f.kind])).toEqual([
      ["fits", "directory"],
      ["fits/a.bin", "blob"],
      ["fits/b.bin", "blob"],
    ]);
  });
});

describe("folders", () => {
  it("captures a folder as itself and everything below it, empty subfolders included", async () => {
    await put("pkg/index.ts", "export {}", 0o644);
    await put("pkg/lib/util.ts", "util", 0o600);
    await put("pkg/lib/deeper/x.sh", "x", 0o755);
    await mkdir(join(workspace, "pkg", "empty", "nested-empty"), { recursive: true });
    await symlink("index.ts", join(workspace, "pkg", "alias.ts"));
    const files = byPath((await snapshot(["pkg"])).files);
    expect(Object.keys(files).sort()).toEqual(
      [
        "pkg",
        "pkg/alias.ts",
        "pkg/empty",
        "pkg/empty/nested-empty",
        "pkg/index.ts",
        "pkg/lib",
        "pkg/lib/deeper",
        "pkg/lib/deeper/x.sh",
        "pkg/lib/util.ts",
      ].sort(),
    );
    expect(files["pkg"]).toMatchObject({ kind: "directory" });
    expect(files["pkg/empty"]).toMatchObject({ kind: "directory" });
    expect(files["pkg/empty/nested-empty"]).toMatchObject({ kind: "directory" });
    expect(files["pkg/alias.ts"]).toEqual({ path: "pkg/alias.ts", kind: "symlink", target: "index.ts" });
    expect(files["pkg/index.ts"]).toEqual({
      path: "pkg/index.ts",
      kind: "blob",
      blob: sha256("export {}"),
      bytes: 9,
      mode: 0o644,
    });
    expect(files["pkg/lib/util.ts"]).toMatchObject({ kind: "blob", mode: 0o600 });
    expect(files["pkg/lib/deeper/x.sh"]).toMatchObject({ kind: "blob", mode: 0o755 });
  });

  it("records a link to an outside folder inside a captured folder as a link, never entering it", async () => {
    await put("tree/own.txt", "own");
    await symlink(outside, join(workspace, "tree", "escape"));
    const { files, blobs } = await snapshot(["tree"]);
    expect(byPath(files)["tree/escape"]).toEqual({ path: "tree/escape", kind: "symlink", target: outside });
    expect(files.some((f) => f.path.includes("secret"))).toBe(false);
    expect([...blobs.values()].some((b) => b.toString().includes("OUTSIDE SECRET"))).toBe(false);
  });

  it("skips a FIFO and an oversized file inside a folder and keeps the rest", async () => {
    await put("mixed/ok.txt", "ok");
    await put("mixed/big.bin", Buffer.alloc(200));
    execFileSync("mkfifo", [join(workspace, "mixed", "pipe")]);
    const files = byPath((await snapshot(["mixed"], { maxFileBytes: 100 })).files);
    expect(files["mixed"]).toMatchObject({ kind: "directory" });
    expect(files["mixed/ok.txt"]).toMatchObject({ kind: "blob" });
    expect(files["mixed/big.bin"]).toMatchObject({ kind: "skipped", reason: "too_large" });
    expect(files["mixed/pipe"]).toMatchObject({ kind: "skipped", reason: "not_a_regular_file" });
  });

  it("captures the whole workspace when given '.', paths relative to it", async () => {
    await put("top.txt", "top");
    await put("sub/inner.txt", "inner");
    const files = (await snapshot(["."])).files;
    expect(Object.fromEntries(files.map((f) => [f.path, f.kind]))).toEqual({
      ".": "directory",
      sub: "directory",
      "top.txt": "blob",
      "sub/inner.txt": "blob",
    });
  });
});

describe("paths", () => {
  it("normalises spellings to one /-separated workspace-relative path, one record per file", async () => {
    await put("a/b.txt", "b");
    const { files } = await snapshot(["./a//b.txt", "a/b.txt", join(workspace, "a", "b.txt"), "a/./x/../b.txt"]);
    expect(files).toEqual([{ path: "a/b.txt", kind: "blob", blob: sha256("b"), bytes: 1, mode: 0o644 }]);
  });

  it("does not record a file twice when it is named on its own and inside a folder that is captured too", async () => {
    await put("d/f.txt", "f");
    const { files } = await snapshot(["d/f.txt", "d"]);
    expect(files.map((f) => f.path)).toEqual(["d/f.txt", "d"]);
  });

  it("stores identical bytes under two paths once", async () => {
    await put("one.txt", "same");
    await put("two.txt", "same");
    const { files, blobs } = await snapshot(["one.txt", "two.txt"]);
    expect(files.map((f) => f.kind === "blob" && f.blob)).toEqual([sha256("same"), sha256("same")]);
    expect(blobs.size).toBe(1);
  });
});

describe("forEachLimited", () => {
  it("rejects only once every started item has settled, and starts none after a failure", async () => {
    const failure = new Error("first write failed");
    let letSecondFinish!: () => void;
    const secondMayFinish = new Promise<void>((resolve) => (letSecondFinish = resolve));
    const started: number[] = [];
    let secondFinished = false;
    const run = forEachLimited([0, 1, 2, 3], 2, async (item) => {
      started.push(item);
      if (item === 0) throw failure;
      if (item === 1) {
        await secondMayFinish;
        secondFinished = true;
      }
    });
    let rejected = false;
    run.catch(() => (rejected = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(rejected).toBe(false); // item 1 is still in flight: a lock holder must not move on yet
    letSecondFinish();
    await expect(run).rejects.toBe(failure);
    expect(secondFinished).toBe(true);
    expect(started).toEqual([0, 1]);
  });

  it("runs every item, never more than the limit at once", async () => {
    let inFlight = 0;
    let most = 0;
    const done: number[] = [];
    await forEachLimited([...Array(20).keys()], 3, async (item) => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      done.push(item);
    });
    expect(done.sort((a, b) => a - b)).toEqual([...Array(20).keys()]);
    expect(most).toBe(3);
  });
});
