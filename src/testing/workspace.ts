import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach } from "vitest";
import type { StorageBackend } from "../backend/types.js";
import type { StoredEvent } from "../core/events.js";
import { CheckpointStore, SessionStore } from "../index.js";

/**
 * Real temp workspace folders for the areas that capture and rewind files, removed after each test
 * along with the stores opened on them (call once per area, at registration).
 */
export function useWorkspaces(): { make: () => Promise<string>; track: (store: SessionStore) => SessionStore } {
  const folders: string[] = [];
  const stores: SessionStore[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
    await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
  });
  return {
    async make() {
      const folder = await realpath(await mkdtemp(join(tmpdir(), "agent-tape-conformance-ws-")));
      folders.push(folder);
      return folder;
    },
    track(store) {
      stores.push(store);
      return store;
    },
  };
}

/** How {@link folderTree} shows a regular file, from its bytes and mode. */
export type FileShown = (bytes: Buffer, mode: number) => string;

const fileAsText: FileShown = (bytes, mode) =>
  `file ${(mode & 0o7777).toString(8)} ${JSON.stringify(bytes.toString("utf8"))}`;

/**
 * What a folder holds, as one comparable object: every entry by `/`-separated path with its kind,
 * mode and content (as `fileShown` writes it). Symlinks are recorded, never followed.
 */
export async function folderTree(root: string, fileShown: FileShown = fileAsText): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  const visit = async (dir: string, prefix: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const path = prefix === "" ? name : `${prefix}/${name}`;
      const absolute = join(dir, name);
      const info = await lstat(absolute);
      if (info.isSymbolicLink()) tree[path] = `link -> ${await readlink(absolute)}`;
      else if (info.isDirectory()) {
        tree[path] = `dir ${(info.mode & 0o7777).toString(8)}`;
        await visit(absolute, path);
      } else tree[path] = fileShown(await readFile(absolute), info.mode);
    }
  };
  await visit(root, "");
  return tree;
}

/** Writes a file (making its folders) with an exact mode, whatever the umask. */
export async function put(workspace: string, path: string, content: string, mode = 0o644): Promise<void> {
  const absolute = join(workspace, path);
  await mkdir(dirname(absolute), { recursive: true });
  await writeFile(absolute, content);
  await chmod(absolute, mode);
}

/** A session whose agent edited a real workspace behind checkpoints, after a target event. */
export interface EditedSession {
  workspace: string;
  store: SessionStore;
  checkpoints: CheckpointStore;
  id: string;
  /** The event rewound to. */
  target: number;
  treeAtTarget: Record<string, string>;
  /** The workspace and the log once every edit is done. */
  treeAfter: Record<string, string>;
  eventsAfter: StoredEvent[];
}

/**
 * Over `backend`, in `workspace`: one edit before the target, then after it a file edited twice,
 * one created, one deleted, one chmod'ed and a nested folder removed, each behind a checkpoint,
 * with the conversation around them.
 */
export async function editSession(
  backend: StorageBackend,
  workspace: string,
  storeOptions: { lockIdleMs?: number } = {},
): Promise<EditedSession> {
  await put(workspace, "README.md", "# demo\n");
  await put(workspace, "src/main.ts", "draft\n");
  await put(workspace, "docs/old.md", "old docs\n");
  await put(workspace, "bin/run.sh", "#!/bin/sh\necho hi\n");
  await put(workspace, "vendor/pkg/index.js", "module.exports = 1;\n", 0o600);
  const store = new SessionStore({ backend, ...storeOptions });
  const checkpoints = new CheckpointStore(store);
  const { id } = await store.create({ workspace, title: "edited" });
  const file = (path: string) => join(workspace, path);
  const say = async (role: "user" | "assistant", content: string) =>
    (await store.append(id, { type: "message", payload: { role, content } })).sequence;

  await say("user", "Bring main.ts to v0.");
  await checkpoints.around(id, { tool: "edit_file", paths: ["src/main.ts"] }, () =>
    writeFile(file("src/main.ts"), "v0\n"),
  );
  const target = await say("assistant", "main.ts is at v0.");
  const treeAtTarget = await folderTree(workspace);

  for (const v of [1, 2]) {
    const callId = `edit-${v}`;
    await store.append(id, { type: "tool_call", payload: { callId, name: "edit_file", input: { v } } });
    await checkpoints.around(id, { tool: "edit_file", paths: ["src/main.ts"], callId }, () =>
      writeFile(file("src/main.ts"), `v${v}\n`),
    );
    await store.append(id, { type: "tool_result", payload: { callId, output: "ok" } });
  }
  await checkpoints.around(id, { tool: "write_file", paths: ["src/new.ts"] }, () =>
    writeFile(file("src/new.ts"), "export {};\n"),
  );
  await checkpoints.around(id, { tool: "delete_file", paths: ["docs/old.md"] }, () => rm(file("docs/old.md")));
  await checkpoints.around(id, { tool: "chmod", paths: ["bin/run.sh"] }, () => chmod(file("bin/run.sh"), 0o755));
  await checkpoints.around(id, { tool: "rm_rf", paths: ["vendor"] }, () => rm(file("vendor"), { recursive: true }));
  await say("assistant", "All done.");
  return {
    workspace,
    store,
    checkpoints,
    id,
    target,
    treeAtTarget,
    treeAfter: await folderTree(workspace),
    eventsAfter: await store.readAll(id),
  };
}
