import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdir, readdir, readFile, realpath, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import {
  CheckpointPayload,
  CheckpointStore,
  type SessionStore,
  isAgentTapeError,
  type CheckpointEvent,
  type FileSnapshot,
} from "../../src/index.js";
import { BLOBS_IN_FLIGHT_RECORD } from "../../src/blobs/in-flight.js";
import { damageBlob, removeBlob } from "../helpers/blob-files.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { onFsOnly, storeBackendKind } from "../helpers/store-backends.js";
import { allOwnerless, ownerless } from "../helpers/ownerless.js";

let root: string;
let workspace: string;
let outside: string;
let secret: string;
let store: SessionStore;
let checkpoints: CheckpointStore;
let sessionId: string;

beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-checkpoints-"));
  root = join(base, "sessions");
  workspace = join(base, "ws");
  outside = join(base, "outside");
  await mkdir(workspace);
  await mkdir(outside);
  // Random, so finding it in a blob can only mean outside content was read.
  secret = `OUTSIDE-SECRET-${randomBytes(16).toString("hex")}`;
  await writeFile(join(outside, "secret.txt"), secret);
  store = openStore({ root });
  checkpoints = new CheckpointStore(store);
  sessionId = (await store.create({ workspace })).id;
});

async function put(path: string, content: string | Buffer, mode = 0o644): Promise<string> {
  const file = join(workspace, path);
  await mkdir(join(file, ".."), { recursive: true });
  await writeFile(file, content);
  await chmod(file, mode);
  return file;
}

const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");

/**
 * Bytes that are a blob file of their own whatever `packBlobsUnder` says (incompressible, over 4 KiB): for the
 * tests of what a blob file is (its mode, its inode, a fork's hard link). Smaller blobs go into the session's pack
 * (docs/format.md, "Blob packs"); the tests of blobs as such look through the backend or test/helpers/blob-files.ts.
 */
const fileSized = (label: string) => Buffer.concat([Buffer.from(label), randomBytes(5000)]);

function blobPath(id: string, hash: string): string {
  return join(root, id, "blobs", hash.slice(0, 2), hash);
}

/**
 * Every file under the session's blobs folder, temp files included: what is really on disk. On another backend
 * (test/helpers/store-backends.ts), the blobs it lists, each named by the file fs would keep it in.
 */
async function filesUnderBlobs(id: string): Promise<string[]> {
  if (storeBackendKind() !== "fs") return (await store.backend.listBlobs(id)).map((hash) => blobPath(id, hash));
  const dir = join(root, id, "blobs");
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

function recordsOf(event: CheckpointEvent | undefined): Record<string, FileSnapshot> {
  if (!event) throw new Error("expected a checkpoint event");
  return Object.fromEntries(event.payload.files.map((f) => [f.path, f]));
}

async function checkpointEvents(id: string): Promise<CheckpointEvent[]> {
  return (await store.readAll(id, { types: ["session_checkpoint"] })) as CheckpointEvent[];
}

describe("capture", () => {
  it("appends one session_checkpoint event indexing the files, with the tool, call id and real workspace", async () => {
    await put("src/a.ts", "export const a = 1;\n");
    const event = await checkpoints.capture(sessionId, { tool: "edit_file", paths: ["src/a.ts"], callId: "call-7" });
    expect(event).toMatchObject({ type: "session_checkpoint", sequence: 1, sessionId });
    expect({ ...event?.payload, files: allOwnerless(event!.payload.files) }).toEqual({
      tool: "edit_file",
      callId: "call-7",
      workspace,
      files: [{ path: "src/a.ts", kind: "blob", blob: sha256("export const a = 1;\n"), bytes: 20, mode: 0o644 }],
    });
    expect(await store.readAll(sessionId)).toEqual([event]);
    expect(await checkpoints.readBlob(sessionId, sha256("export const a = 1;\n"))).toEqual(
      Buffer.from("export const a = 1;\n"),
    );
  });

  it("records every kind in one event that reads back valid against the CheckpointPayload schema", async () => {
    await put("file.txt", "file");
    await put("big.bin", Buffer.alloc(64));
    await mkdir(join(workspace, "folder"));
    await symlink("file.txt", join(workspace, "link"));
    execFileSync("mkfifo", [join(workspace, "pipe")]);
    await put("many/a", "a");
    await put("many/b", "b");
    const small = new CheckpointStore(store, { maxFileBytes: 32, maxDirectoryEntries: 1 });
    const event = await small.capture(sessionId, {
      tool: "bash",
      paths: [
        "file.txt",
        "not-yet.txt",
        "link",
        "folder",
        "big.bin",
        "pipe",
        "file.txt/under",
        "../outside/secret.txt",
        "many",
      ],
    });
    const [stored] = await checkpointEvents(sessionId);
    expect(stored).toEqual(event);
    expect(CheckpointPayload.parse(stored!.payload)).toEqual(stored!.payload);
    const files = recordsOf(stored);
    expect(files["file.txt"]).toMatchObject({ kind: "blob" });
    expect(files["not-yet.txt"]).toEqual({ path: "not-yet.txt", kind: "absent" });
    expect(ownerless(files["link"])).toEqual({ path: "link", kind: "symlink", target: "file.txt" });
    expect(files["folder"]).toMatchObject({ kind: "directory" });
    expect(files["big.bin"]).toMatchObject({ kind: "skipped", reason: "too_large" });
    expect(files["pipe"]).toMatchObject({ kind: "skipped", reason: "not_a_regular_file" });
    // Below a file there is nothing (a folder turned into a file): absent, not unreadable (ENOTDIR).
    expect(files["file.txt/under"]).toEqual({ path: "file.txt/under", kind: "absent" });
    expect(files["../outside/secret.txt"]).toMatchObject({ kind: "skipped", reason: "outside_workspace" });
    expect(files["many"]).toMatchObject({ kind: "skipped", reason: "over_budget" });
    expect(files["many/a"]).toMatchObject({ kind: "blob" });
  });

  it("records mode bits 0755, 0644 and 0600 as they are on disk", async () => {
    await put("run.sh", "#!/bin/sh\n", 0o755);
    await put("notes.md", "notes", 0o644);
    await put("id_rsa", "key", 0o600);
    const files = recordsOf(
      await checkpoints.capture(sessionId, { tool: "chmod", paths: ["run.sh", "notes.md", "id_rsa"] }),
    );
    expect([files["run.sh"], files["notes.md"], files["id_rsa"]].map((f) => f?.kind === "blob" && f.mode)).toEqual([
      0o755, 0o644, 0o600,
    ]);
  });

  it("normalises paths: ./ and doubled slashes, absolute paths inside the workspace, / separators", async () => {
    await put("a/b.txt", "b");
    await put("c/d/e.txt", "e");
    const event = await checkpoints.capture(sessionId, {
      tool: "edit",
      paths: ["./a//b.txt", join(workspace, "c", "d", "e.txt"), "a/b.txt"],
    });
    expect(event?.payload.files.map((f) => f.path)).toEqual(["a/b.txt", "c/d/e.txt"]);
  });

  it("uses the workspace passed to capture over the session's", async () => {
    const other = await tempDir("agent-tape-other-ws-");
    await writeFile(join(other, "only-here.txt"), "other workspace");
    const event = await checkpoints.capture(sessionId, { tool: "edit", paths: ["only-here.txt"], workspace: other });
    expect(event?.payload.workspace).toBe(await realpath(other));
    expect(event?.payload.files[0]).toMatchObject({ kind: "blob", blob: sha256("other workspace") });
  });

  it("captures a folder, nested and with empty subfolders, so deleting it can be rewound", async () => {
    await put("pkg/index.ts", "index");
    await put("pkg/lib/util.ts", "util");
    await mkdir(join(workspace, "pkg", "empty", "inner"), { recursive: true });
    const files = recordsOf(await checkpoints.capture(sessionId, { tool: "rm -r", paths: ["pkg"] }));
    expect(Object.fromEntries(Object.entries(files).map(([p, f]) => [p, f.kind]))).toEqual({
      pkg: "directory",
      "pkg/empty": "directory",
      "pkg/empty/inner": "directory",
      "pkg/lib": "directory",
      "pkg/index.ts": "blob",
      "pkg/lib/util.ts": "blob",
    });
    expect((await checkpoints.readBlob(sessionId, sha256("util"))).toString()).toBe("util");
  });

  it("records a folder past maxDirectoryEntries or maxDirectoryBytes as over_budget, keeps earlier blobs", async () => {
    for (const n of [1, 2, 3, 4]) await put(`logs/${n}.log`, `log ${n}`);
    const byEntries = new CheckpointStore(store, { maxDirectoryEntries: 2 });
    const first = recordsOf(await byEntries.capture(sessionId, { tool: "clean", paths: ["logs"] }));
    expect(first["logs"]).toMatchObject({ kind: "skipped", reason: "over_budget" });
    expect(Object.keys(first).sort()).toEqual(["logs", "logs/1.log", "logs/2.log"]);

    // Each file is 5 bytes: three fit in 15, the fourth goes over.
    const byBytes = new CheckpointStore(store, { maxDirectoryBytes: 15 });
    const second = recordsOf(await byBytes.capture(sessionId, { tool: "clean", paths: ["logs"] }));
    expect(second["logs"]).toMatchObject({ kind: "skipped", reason: "over_budget" });
    expect(Object.keys(second).sort()).toEqual(["logs", "logs/1.log", "logs/2.log", "logs/3.log"]);
    for (const record of [...Object.values(first), ...Object.values(second)]) {
      if (record.kind === "blob")
        expect((await checkpoints.readBlob(sessionId, record.blob)).length).toBe(record.bytes);
    }
  });

  it("makes one event for many paths", async () => {
    const paths = Array.from({ length: 150 }, (_, i) => `files/f${i}.txt`);
    for (const [i, path] of paths.entries()) await put(path, `content ${i}`);
    const event = await checkpoints.capture(sessionId, { tool: "sed -i", paths });
    expect(await store.readAll(sessionId)).toHaveLength(1);
    expect(event?.payload.files.map((f) => f.path)).toEqual(paths);
    expect(event?.payload.files.every((f) => f.kind === "blob")).toBe(true);
    expect(await store.backend.listBlobs(sessionId)).toHaveLength(150);
  });

  it("returns undefined for no paths and writes nothing", async () => {
    expect(await checkpoints.capture(sessionId, { tool: "noop", paths: [] })).toBeUndefined();
    expect(await store.readAll(sessionId)).toEqual([]);
    expect(await filesUnderBlobs(sessionId)).toEqual([]);
  });

  it("keeps a blobs-in-flight note while it holds the lock, and leaves none once the lock is given up", async () => {
    await put("a.txt", "a");
    await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
    expect(await store.backend.listRecords(sessionId)).toEqual([BLOBS_IN_FLIGHT_RECORD]); // the lease is still held
    await store.close();
    expect(await openStore({ root }).backend.listRecords(sessionId)).toEqual([]);
  });

  onFsOnly("the mode of the fs backend's blob files", () => {
    it("stores blob files read-only (0444)", async () => {
      const bytes = fileSized("read only please");
      await put("a.txt", bytes);
      await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
      expect((await stat(blobPath(sessionId, sha256(bytes)))).mode & 0o777).toBe(0o444);
    });
  });
});

describe("dedupe", () => {
  it("stores the same bytes under two paths as one blob file", async () => {
    const identical = fileSized("identical");
    await put("one.txt", identical);
    await put("nested/two.txt", identical);
    const files = recordsOf(
      await checkpoints.capture(sessionId, { tool: "edit", paths: ["one.txt", "nested/two.txt"] }),
    );
    expect(files["one.txt"]).toMatchObject({ kind: "blob", blob: sha256(identical) });
    expect(files["nested/two.txt"]).toMatchObject({ kind: "blob", blob: sha256(identical) });
    expect(await filesUnderBlobs(sessionId)).toEqual([blobPath(sessionId, sha256(identical))]);
  });

  onFsOnly("the inode, mtime and shard folder of the fs backend's blob file", () => {
    it("does not write an existing blob again: same inode, same mtime, shard folder untouched", async () => {
      const bytes = fileSized("unchanged between captures");
      await put("a.txt", bytes);
      await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
      const blob = blobPath(sessionId, sha256(bytes));
      const before = await stat(blob);
      const shardBefore = await stat(join(blob, ".."));
      await put("b.txt", bytes);
      const again = await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt", "b.txt"] });
      const after = await stat(blob);
      const shardAfter = await stat(join(blob, ".."));
      expect(again?.sequence).toBe(2);
      expect(after.ino).toBe(before.ino);
      expect(after.mtimeMs).toBe(before.mtimeMs);
      // A temp file created and renamed over the blob would have changed the folder.
      expect(shardAfter.mtimeMs).toBe(shardBefore.mtimeMs);
      expect(await filesUnderBlobs(sessionId)).toEqual([blob]);
    });

    it("does not append a packed blob again: the pack's one segment keeps its inode and its size", async () => {
      await put("a.txt", "small, so packed\n");
      await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
      const segment = join(root, sessionId, "blobs", "pack", "00000001.pack");
      const before = await stat(segment);
      await put("b.txt", "small, so packed\n");
      const again = await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt", "b.txt"] });
      const after = await stat(segment);
      expect(again?.sequence).toBe(2);
      expect([after.ino, after.size, after.mtimeMs]).toEqual([before.ino, before.size, before.mtimeMs]);
      expect(await filesUnderBlobs(sessionId)).toEqual([segment]);
      expect(await checkpoints.readBlob(sessionId, sha256("small, so packed\n"))).toEqual(
        Buffer.from("small, so packed\n"),
      );
    });
  });
});

describe("readBlob", () => {
  it("refuses a blob whose bytes were altered with BLOB_CORRUPT", async () => {
    await put("a.txt", "original bytes");
    await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
    const hash = sha256("original bytes");
    await damageBlob(root, sessionId, hash, "tampered bytes");
    const error = await checkpoints.readBlob(sessionId, hash).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "BLOB_CORRUPT")).toBe(true);
    expect(error).toMatchObject({ hash, actual: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect((error as { actual: string }).actual).not.toBe(hash);
  });

  it("refuses a truncated blob with BLOB_CORRUPT", async () => {
    const bytes = fileSized("bytes that get cut short"); // a file of its own, cut short by hand
    await put("a.txt", bytes);
    await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
    const hash = sha256(bytes);
    await damageBlob(root, sessionId, hash, "bytes that");
    await expect(checkpoints.readBlob(sessionId, hash)).rejects.toSatisfy((e) => isAgentTapeError(e, "BLOB_CORRUPT"));
  });

  it("says BLOB_NOT_FOUND for a missing blob, a never-stored hash and a hash that is not a sha256", async () => {
    const gone = fileSized("soon gone"); // a file of its own, removed by hand
    await put("a.txt", gone);
    await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
    await removeBlob(root, sessionId, sha256(gone));
    for (const hash of [sha256(gone), sha256("never stored"), "../../session.json"])
      await expect(checkpoints.readBlob(sessionId, hash)).rejects.toSatisfy((e) =>
        isAgentTapeError(e, "BLOB_NOT_FOUND"),
      );
  });

  it("says SESSION_NOT_FOUND for a session that does not exist", async () => {
    await expect(checkpoints.readBlob("no-such-session", sha256("x"))).rejects.toSatisfy((e) =>
      isAgentTapeError(e, "SESSION_NOT_FOUND"),
    );
  });
});

describe("confinement: nothing outside the workspace is read or recorded absent", () => {
  async function everyBlobHoldsNoSecret(id: string): Promise<void> {
    if (storeBackendKind() !== "fs") {
      for (const hash of await store.backend.listBlobs(id))
        expect((await store.backend.readBlob(id, hash))?.includes(secret)).toBe(false);
      return;
    }
    for (const file of await filesUnderBlobs(id)) expect((await readFile(file)).includes(secret)).toBe(false);
  }

  it("withstands links to an outside folder and file, a dangling link, ../ and absolute paths", async () => {
    await put("own.txt", "own content");
    await symlink(outside, join(workspace, "dir-out"));
    await symlink(join(outside, "secret.txt"), join(workspace, "file-out"));
    await symlink(join(outside, "vanished"), join(workspace, "dangling"));
    await symlink("../outside", join(workspace, "relative-out"));
    const attempts = [
      "dir-out",
      "dir-out/secret.txt",
      "dir-out/not-there.txt",
      "file-out",
      "dangling",
      "dangling/child.txt",
      "relative-out/secret.txt",
      "../outside/secret.txt",
      "../outside/not-there.txt",
      "own.txt/../../outside/secret.txt",
      join(outside, "secret.txt"),
      join(outside, "not-there.txt"),
      ".",
    ];
    const event = await checkpoints.capture(sessionId, { tool: "bash", paths: attempts });
    const files = recordsOf(event);
    expect(ownerless(files["dir-out"])).toEqual({ path: "dir-out", kind: "symlink", target: outside });
    expect(ownerless(files["file-out"])).toEqual({
      path: "file-out",
      kind: "symlink",
      target: join(outside, "secret.txt"),
    });
    expect(ownerless(files["dangling"])).toEqual({
      path: "dangling",
      kind: "symlink",
      target: join(outside, "vanished"),
    });
    for (const path of attempts.filter((p) => !["dir-out", "file-out", "dangling", "."].includes(p)))
      expect(files[path] ?? files[path.replace(/^\.\//, "")], path).toMatchObject({
        kind: "skipped",
        reason: "outside_workspace",
      });
    // Whatever the spelling, anything recorded absent must be a path inside the workspace.
    for (const record of event!.payload.files) expect(record.kind === "absent" && record.path).toBe(false);
    expect(files["own.txt"]).toMatchObject({ kind: "blob" });
    await everyBlobHoldsNoSecret(sessionId);
  });

  it("captures through a workspace given by a symlink to it, recording paths against its real path", async () => {
    const link = join(workspace, "..", "ws-link");
    await symlink(workspace, link);
    await put("a.txt", "reached through the link");
    const event = await checkpoints.capture(sessionId, {
      tool: "edit",
      workspace: link,
      paths: ["a.txt", join(link, "a.txt"), join(link, "..", "outside", "secret.txt")],
    });
    expect(event?.payload.workspace).toBe(workspace);
    expect(allOwnerless(event!.payload.files)).toEqual([
      { path: "a.txt", kind: "blob", blob: sha256("reached through the link"), bytes: 24, mode: 0o644 },
      { path: join(link, "..", "outside", "secret.txt"), kind: "skipped", reason: "outside_workspace" },
    ]);
    await everyBlobHoldsNoSecret(sessionId);
  });

  it("records a symlink to an inside file as its target text, and the file it leads to by its own name", async () => {
    // A tool handed the link writes through it: the target's before-state is what a rewind needs.
    await put("real.txt", "read by its own name");
    await symlink("real.txt", join(workspace, "alias.txt"));
    const event = await checkpoints.capture(sessionId, { tool: "edit", paths: ["alias.txt"] });
    expect(allOwnerless(event!.payload.files)).toEqual([
      { path: "alias.txt", kind: "symlink", target: "real.txt" },
      { path: "real.txt", kind: "blob", blob: sha256("read by its own name"), bytes: 20, mode: 0o644 },
    ]);
  });
});

describe("around", () => {
  it("captures before running the tool and returns what it returns", async () => {
    const file = await put("a.txt", "before");
    const result = await checkpoints.around(sessionId, { tool: "edit", paths: ["a.txt"] }, async () => {
      const [checkpoint] = await checkpointEvents(sessionId);
      expect(recordsOf(checkpoint)["a.txt"]).toMatchObject({ blob: sha256("before") });
      await writeFile(file, "after");
      return "edited";
    });
    expect(result).toBe("edited");
    expect(await checkpointEvents(sessionId)).toHaveLength(1);
  });

  it("keeps the checkpoint and rethrows when the tool throws", async () => {
    const file = await put("a.txt", "before the failed edit");
    const failure = new Error("tool blew up half way");
    const run = checkpoints.around(sessionId, { tool: "edit", paths: ["a.txt"] }, async () => {
      await writeFile(file, "half");
      throw failure;
    });
    await expect(run).rejects.toBe(failure);
    const [checkpoint] = await checkpointEvents(sessionId);
    const record = recordsOf(checkpoint)["a.txt"];
    expect(record).toMatchObject({ kind: "blob", blob: sha256("before the failed edit") });
    expect((await checkpoints.readBlob(sessionId, sha256("before the failed edit"))).toString()).toBe(
      "before the failed edit",
    );
  });

  it("keeps the checkpoint and rethrows when the tool throws synchronously", async () => {
    await put("a.txt", "sync");
    const failure = new Error("thrown before any await");
    await expect(
      checkpoints.around(sessionId, { tool: "edit", paths: ["a.txt"] }, () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await checkpointEvents(sessionId)).toHaveLength(1);
  });

  it("rejects with signal.reason when aborted mid-run, gives the tool the signal, keeps the checkpoint", async () => {
    const file = await put("a.txt", "before the cancelled edit");
    const controller = new AbortController();
    const reason = new Error("user pressed stop");
    let markStarted!: () => void;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    let letToolFinish!: () => void;
    const toolCanFinish = new Promise<void>((resolve) => (letToolFinish = resolve));
    let signalSeen: AbortSignal | undefined;
    const run = checkpoints.around(
      sessionId,
      { tool: "edit", paths: ["a.txt"], signal: controller.signal },
      async (signal) => {
        signalSeen = signal;
        await writeFile(file, "half written");
        markStarted();
        await toolCanFinish;
        return "finished too late";
      },
    );
    await started;
    controller.abort(reason);
    await expect(run).rejects.toBe(reason);
    expect(signalSeen?.aborted).toBe(true);
    letToolFinish();
    const [checkpoint] = await checkpointEvents(sessionId);
    expect(recordsOf(checkpoint)["a.txt"]).toMatchObject({ kind: "blob", blob: sha256("before the cancelled edit") });
    expect((await checkpoints.readBlob(sessionId, sha256("before the cancelled edit"))).toString()).toBe(
      "before the cancelled edit",
    );
  });

  it("rejects with signal.reason when aborted before it starts: the tool never runs, nothing is written", async () => {
    await put("a.txt", "untouched");
    const controller = new AbortController();
    const reason = new Error("cancelled before start");
    controller.abort(reason);
    let ran = false;
    const run = checkpoints.around(sessionId, { tool: "edit", paths: ["a.txt"], signal: controller.signal }, () => {
      ran = true;
    });
    await expect(run).rejects.toBe(reason);
    expect(ran).toBe(false);
    expect(await store.readAll(sessionId)).toEqual([]);
    expect(await filesUnderBlobs(sessionId)).toEqual([]);
  });
});

describe("misuse is a typed error and writes nothing", () => {
  it("SESSION_NOT_FOUND for a session that does not exist, workspace given or not, paths or none", async () => {
    await put("a.txt", "a");
    for (const input of [
      { tool: "edit", paths: ["a.txt"] },
      { tool: "edit", paths: ["a.txt"], workspace },
      { tool: "edit", paths: [] },
      { tool: "edit", paths: [], workspace },
    ])
      await expect(checkpoints.capture("no-such-session", input), JSON.stringify(input)).rejects.toSatisfy((e) =>
        isAgentTapeError(e, "SESSION_NOT_FOUND"),
      );
    await expect(
      checkpoints.around("no-such-session", { tool: "edit", paths: ["a.txt"] }, () => "ran"),
    ).rejects.toSatisfy((e) => isAgentTapeError(e, "SESSION_NOT_FOUND"));
    expect(await store.list()).toHaveLength(1);
  });

  it("INVALID_ARGUMENT for an empty or blank tool name", async () => {
    await put("a.txt", "a");
    for (const tool of ["", "   "])
      await expect(checkpoints.capture(sessionId, { tool, paths: ["a.txt"] })).rejects.toSatisfy((e) =>
        isAgentTapeError(e, "INVALID_ARGUMENT"),
      );
    expect(await store.readAll(sessionId)).toEqual([]);
  });

  it("INVALID_ARGUMENT when paths is not a list of strings", async () => {
    await expect(
      checkpoints.capture(sessionId, { tool: "edit", paths: "a.txt" as unknown as string[] }),
    ).rejects.toSatisfy((e) => isAgentTapeError(e, "INVALID_ARGUMENT"));
    await expect(
      checkpoints.capture(sessionId, { tool: "edit", paths: [42] as unknown as string[] }),
    ).rejects.toSatisfy((e) => isAgentTapeError(e, "INVALID_ARGUMENT"));
  });

  it("INVALID_EVENT for a callId that is not a string, before any blob is written", async () => {
    await put("a.txt", "not stored for a bad call");
    await expect(
      checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"], callId: 42 as unknown as string }),
    ).rejects.toSatisfy((e) => isAgentTapeError(e, "INVALID_EVENT"));
    expect(await store.readAll(sessionId)).toEqual([]);
    expect(await filesUnderBlobs(sessionId)).toEqual([]);
    expect(await store.backend.listRecords(sessionId)).toEqual([]);
  });

  it("INVALID_ARGUMENT when neither the session nor the call names a workspace, or it does not exist", async () => {
    const bare = await store.create();
    await expect(checkpoints.capture(bare.id, { tool: "edit", paths: ["a.txt"] })).rejects.toSatisfy((e) =>
      isAgentTapeError(e, "INVALID_ARGUMENT"),
    );
    await expect(
      checkpoints.capture(bare.id, { tool: "edit", paths: ["a.txt"], workspace: join(workspace, "missing") }),
    ).rejects.toSatisfy((e) => isAgentTapeError(e, "INVALID_ARGUMENT"));
    expect(await store.readAll(bare.id)).toEqual([]);
  });
});

describe("fork", () => {
  it("carries the blobs its checkpoints need, as hard links that outlive the parent", async () => {
    const kept = fileSized("kept by the fork");
    await put("a.txt", kept);
    const checkpoint = await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
    await put("a.txt", fileSized("after the fork point"));
    await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
    const fork = await store.fork(sessionId, { atSequence: checkpoint!.sequence });
    const hash = sha256(kept);
    expect(await checkpoints.readBlob(fork.id, hash)).toEqual(kept);
    // The fs backend shares the blob as a hard link (docs/ARCHITECTURE.md); another copies it in its store.
    if (storeBackendKind() === "fs")
      expect((await stat(blobPath(fork.id, hash))).ino).toBe((await stat(blobPath(sessionId, hash))).ino);
    // Only what the copied checkpoint refers to.
    expect(await filesUnderBlobs(fork.id)).toEqual([blobPath(fork.id, hash)]);

    await store.delete(sessionId);
    expect(await checkpoints.readBlob(fork.id, hash)).toEqual(kept);
    const after = await checkpoints.capture(fork.id, { tool: "edit", paths: ["a.txt"] });
    expect(after?.sequence).toBe(checkpoint!.sequence + 2); // after the copied prefix and the fork event
  });
});
