import { execFileSync } from "node:child_process";
import { chmod, mkdir, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { expect } from "vitest";
import type { CheckpointStore, RewindReport, SessionStore } from "../../src/index.js";
import { rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "./whole-tree.js";
import { workspaceWithStore } from "./fixture.js";

/** A small workspace to lay out: folders, files (their folders made), folder modes, then links. */
export interface SmallShape {
  folders?: readonly string[];
  files?: Readonly<Record<string, string>>;
  /** Set after the files are written: a mode a new folder does not get makes a rewind change the folder. */
  modes?: Readonly<Record<string, number>>;
  /** Link name → the text it holds (relative to the link's folder, as `ln -s` takes it). */
  links?: Readonly<Record<string, string>>;
}

type Tree = Record<string, string>;

/**
 * A session on a small workspace, as the rewind regression tests tell one: the store, a "start" message to
 * rewind to, the whole tree there, and the steps such a test takes (a shell command under `aroundCommand`, a
 * tool under `around`, a rewind checked both ways). Closed and removed when the test finishes.
 */
export interface SmallSession {
  workspace: string;
  store: SessionStore;
  checkpoints: CheckpointStore;
  id: string;
  /** The sequence of the "start" message, appended once the workspace was laid out. */
  start: number;
  /** The whole tree (byteTreeOf) at `start`. */
  before: Tree;
  /** The session's last sequence. */
  head(): Promise<number>;
  tree(): Promise<Tree>;
  /** Runs `/bin/sh -c script` in the workspace under `aroundCommand`; the head after it. */
  command(script: string): Promise<number>;
  /** Runs `work` under `around`, the tool named `tool` handed `paths`; the head after it. */
  tool(tool: string, paths: string[], work: () => Promise<unknown>): Promise<number>;
  /**
   * Rewinds to `to` (default `start`) in `mode` (default "files") and expects no skip and the tree `wanted` (default
   * `before`); then undoes it and expects the tree from before the rewind. The rewind's report.
   */
  rewindThenUndo(options?: { to?: number; mode?: "files" | "all"; wanted?: Tree }): Promise<RewindReport>;
}

export async function smallSession(prefix: string, shape: SmallShape): Promise<SmallSession> {
  const { workspace, store, checkpoints } = await workspaceWithStore(prefix);
  const at = (path: string) => join(workspace, path);
  for (const folder of shape.folders ?? []) await mkdir(at(folder), { recursive: true });
  for (const [path, content] of Object.entries(shape.files ?? {})) {
    await mkdir(dirname(at(path)), { recursive: true });
    await writeFile(at(path), content);
  }
  for (const [path, mode] of Object.entries(shape.modes ?? {})) await chmod(at(path), mode);
  for (const [link, target] of Object.entries(shape.links ?? {})) await symlink(target, at(link));
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const tree = () => byteTreeOf(workspace);
  const before = await tree();
  const head = async () => (await store.get(id))!.lastSequence;
  return {
    workspace,
    store,
    checkpoints,
    id,
    start,
    before,
    head,
    tree,
    async command(script) {
      await checkpoints.aroundCommand(id, { tool: "bash" }, () =>
        execFileSync("/bin/sh", ["-c", script], { cwd: workspace }),
      );
      return head();
    },
    async tool(tool, paths, work) {
      await checkpoints.around(id, { tool, paths }, work);
      return head();
    },
    async rewindThenUndo({ to = start, mode = "files", wanted = before } = {}) {
      const now = await tree();
      const report = await rewind(store, id, { toSequence: to, mode });
      expect(report.skipped).toEqual([]);
      expect(await tree()).toEqual(wanted);
      await undoRewind(store, id);
      expect(await tree()).toEqual(now);
      return report;
    },
  };
}
