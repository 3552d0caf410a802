import { mkdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore } from "../../src/index.js";
import type { TempRoots } from "./temp-root.js";

/**
 * An empty workspace folder (`<base>/ws`, by its real path) and a store beside it (`<base>/sessions`) with a
 * checkpoint store on it: the setup of the tests that act on a workspace through the public entry. The caller
 * closes the stores and removes the temp roots in its afterEach.
 */
export async function workspaceWithStore(temps: TempRoots, prefix: string) {
  const base = await realpath(await temps.make(prefix));
  const workspace = join(base, "ws");
  await mkdir(workspace);
  const root = join(base, "sessions");
  const store = new SessionStore({ root });
  return { base, workspace, root, store, checkpoints: new CheckpointStore(store) };
}
