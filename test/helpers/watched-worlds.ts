import { execFileSync } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "vitest";
import {
  CheckpointStore,
  type SessionStore,
  type CheckpointPayload,
  type FileSnapshot,
  type ScanReport,
  type WorkspaceIndexOptions,
} from "../../src/index.js";
import { treeOf } from "./workspace-tree.js";
import { openStore } from "./fixture.js";

// The differential harness of the watched-scan tests (docs/ARCHITECTURE.md, "Watched scans"): two copies of one
// workspace, one session each, one watched and one walked; the same commands run in both must leave the same
// checkpoints and the same trees.

/** One copy of the workspace with its own store, session and scan reports. */
export interface World {
  workspace: string;
  store: SessionStore;
  checkpoints: CheckpointStore;
  id: string;
  scans: ScanReport[];
}

/** Makes the seed folder with `fill`, then its two copies `<base>/a` and `<base>/b`. */
export async function twinWorkspaces(base: string, fill: (seed: string) => Promise<void>): Promise<void> {
  const seed = join(base, "seed");
  await mkdir(seed, { recursive: true });
  await fill(seed);
  execFileSync("cp", ["-a", seed, join(base, "a")]);
  execFileSync("cp", ["-a", seed, join(base, "b")]);
}

/** A session on `<base>/<name>`, watched or walked, with its own store beside it. */
export async function openWorld(
  base: string,
  name: string,
  watch: boolean,
  options: WorkspaceIndexOptions = {},
): Promise<World> {
  const workspace = join(base, name);
  const store = openStore({ root: join(base, `${name}-sessions`) });
  const scans: ScanReport[] = [];
  const checkpoints = new CheckpointStore(store, {
    workspaceIndex: { ...options, watch, onScan: (scan) => scans.push(scan) },
  });
  const id = (await store.create({ workspace })).id;
  return { workspace, store, checkpoints, id, scans };
}

export async function closeWorlds(...worlds: (World | undefined)[]): Promise<void> {
  for (const w of worlds) {
    w?.checkpoints.close();
    await w?.store.close();
  }
}

/** Runs a bash command in the world's workspace, as a shell tool would. */
export const sh = (w: World, command: string) =>
  execFileSync("bash", ["-c", command], { cwd: w.workspace, stdio: "ignore", env: { ...process.env, LC_ALL: "C" } });

/** The files of the world's last checkpoint (none before the first). */
export async function lastFiles(w: World): Promise<FileSnapshot[]> {
  const event = (await w.store.readAll(w.id)).filter((e) => e.type === "session_checkpoint").at(-1);
  return (event?.payload as CheckpointPayload | undefined)?.files ?? [];
}

/** The workspace's tree, without the folder the watcher writes its barriers in (when the temp folder is inside). */
export async function ownTree(workspace: string): Promise<Record<string, string>> {
  const tree = await treeOf(workspace);
  for (const path of Object.keys(tree)) if (/(^|\/)agent-tape-watch-/.test(path)) delete tree[path];
  return tree;
}

/**
 * Runs `command` in both worlds inside aroundCommand (the watched one through `checkpoints` when given) and
 * expects the same checkpoint and the same tree; returns the watched world's checkpoint files.
 */
export async function inBoth(
  [watched, walking]: readonly [World, World],
  command: string,
  checkpoints?: CheckpointStore,
): Promise<FileSnapshot[]> {
  const outcomes: FileSnapshot[][] = [];
  for (const w of [watched, walking]) {
    const store = w === watched && checkpoints !== undefined ? checkpoints : w.checkpoints;
    await store.aroundCommand(w.id, { tool: "bash" }, () => sh(w, command));
    outcomes.push(await lastFiles(w));
  }
  expect(outcomes[0], command).toEqual(outcomes[1]);
  expect(await ownTree(watched.workspace), command).toEqual(await ownTree(walking.workspace));
  return outcomes[0]!;
}
