import { BLOBS_IN_FLIGHT_RECORD } from "../../src/blobs/in-flight.js";
import { CheckpointStore, type SessionStore } from "../../src/index.js";
import { folderTree } from "../../src/testing/workspace.js";
import { createHash } from "node:crypto";
import { chmod, mkdir, realpath, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { openStore, tempDir } from "./fixture.js";

/**
 * What a folder holds, byte for byte, as one comparable object: every entry below it by
 * `/`-separated path, with its kind, mode and content (files up to 120 bytes spelled out, larger
 * ones by sha256 so a failing diff stays readable). Symlinks are recorded, never followed.
 */
export async function workspaceTree(root: string): Promise<Record<string, string>> {
  return folderTree(root, fileEntry);
}

/** How {@link workspaceTree} shows a regular file: for building the tree a test expects. */
export function fileEntry(content: string | Buffer, mode: number): string {
  const bytes = Buffer.from(content);
  const shown =
    bytes.length <= 120 ? JSON.stringify(bytes.toString("utf8")) : `sha256:${sha256(bytes)} (${bytes.length} bytes)`;
  return `file ${(mode & 0o7777).toString(8)} ${shown}`;
}

export function sha256(bytes: string | Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Writes a file (making its folders) with an exact mode, whatever the umask. */
export async function put(workspace: string, path: string, content: string | Uint8Array, mode = 0o644): Promise<void> {
  const absolute = join(workspace, path);
  await mkdir(dirname(absolute), { recursive: true });
  await writeFile(absolute, content);
  await chmod(absolute, mode);
}

/**
 * The session's side records, less the blobs-in-flight note: that note belongs to the lock the
 * test's store still holds (it goes when the lock is given up; checkpoint-store.test.ts proves
 * that), so it is no leftover of the operation under test.
 */
export async function recordsLeft(store: SessionStore, id: string): Promise<string[]> {
  return (await store.backend.listRecords(id)).filter((name) => name !== BLOBS_IN_FLIGHT_RECORD);
}

/**
 * A session whose one tool call edited a.txt and b.txt (a1/b1 -> a2/b2) after `target`, then one more message:
 * the story of the pending-rewind tests. The store is closed when the test finishes (test/helpers/fixture.ts).
 */
export async function editedTwoFiles(prefix: string) {
  const workspace = join(await realpath(await tempDir(prefix)), "ws");
  const root = `${workspace}-sessions`;
  await put(workspace, "a.txt", "a1\n");
  await put(workspace, "b.txt", "b1\n");
  const store = openStore({ root });
  const { id } = await store.create({ workspace });
  const target = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  await new CheckpointStore(store).around(id, { tool: "edit", paths: ["a.txt", "b.txt"] }, async () => {
    await put(workspace, "a.txt", "a2\n");
    await put(workspace, "b.txt", "b2\n");
  });
  await store.append(id, { type: "message", payload: { role: "assistant", content: "edited" } });
  return { workspace, root, store, id, target };
}
