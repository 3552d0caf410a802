import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test as base, onTestFinished } from "vitest";
import { CheckpointStore, SessionStore, type EventSchemas, type SessionStoreOptions } from "../../src/index.js";
import { onChosenBackend, storeBackendKind } from "./store-backends.js";

/**
 * The one setup every test file that makes a temp folder or a store uses (test/fixture-everywhere.test.ts
 * keeps it so): what a test makes is closed, then removed, when the test finishes, passed or failed.
 *
 * Two doors onto the same thing:
 * - `test`, a vitest `test.extend` whose fixtures (`tempDir`, `openStore`, `closeAfter`, `workspace`) belong
 *   to the test's own context: the one to use in `describe.concurrent` files;
 * - the same names as plain functions, for `beforeEach` and for helpers a test calls (they bind to the
 *   running test through vitest's `onTestFinished`, so no context has to be passed down to them).
 */

/** Anything a test opens that must be closed after it: a store, a backend, a checkpoint store. */
export interface Closable {
  close(): Promise<void> | void;
}

/** Removes `dir` and all below it; GNU rm for trees deeper than node's rm reaches (it stops at PATH_MAX). */
async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch {
    execFileSync("rm", ["-rf", dir]);
  }
}

/** What one test made: the closables are closed first, then the folders removed, even if a close fails. */
class Leftovers {
  private readonly closables: Closable[] = [];
  private readonly dirs: string[] = [];

  async tempDir(prefix = "agent-tape-"): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    this.dirs.push(dir);
    return dir;
  }

  closeAfter<T extends Closable>(closable: T): T {
    this.closables.push(closable);
    return closable;
  }

  /** Closes the last opened first (a checkpoint store before the store under it), then removes the folders. */
  async clear(): Promise<void> {
    const failures: unknown[] = [];
    for (const closable of this.closables.splice(0).reverse()) {
      try {
        await closable.close();
      } catch (error) {
        failures.push(error);
      }
    }
    await Promise.all(this.dirs.splice(0).map(removeTree));
    if (failures.length > 0) throw failures[0];
  }
}

/** An empty workspace folder (`<base>/ws`, by its real path) and a store beside it (`<base>/sessions`). */
export interface WorkspaceWithStore {
  base: string;
  workspace: string;
  root: string;
  store: SessionStore;
  checkpoints: CheckpointStore;
}

async function workspaceIn(leftovers: Leftovers, prefix: string): Promise<WorkspaceWithStore> {
  const base = await realpath(await leftovers.tempDir(prefix));
  const workspace = join(base, "ws");
  await mkdir(workspace);
  const root = join(base, "sessions");
  const closeAfter = <T extends Closable>(closable: T) => leftovers.closeAfter(closable);
  const store = closeAfter(new SessionStore(onChosenBackend({ root }, closeAfter)));
  return { base, workspace, root, store, checkpoints: leftovers.closeAfter(new CheckpointStore(store)) };
}

// ---- plain functions, bound to the running test ----------------------------------------------

let current: Leftovers | undefined;

function running(): Leftovers {
  if (current) return current;
  const leftovers = new Leftovers();
  current = leftovers;
  // Throws outside a test or its beforeEach/afterEach: a folder made there would outlive its test.
  onTestFinished(async () => {
    if (current === leftovers) current = undefined;
    await leftovers.clear();
  });
  return leftovers;
}

/** A new temp folder (`<tmpdir>/<prefix>XXXXXX`), removed with all it holds when the running test finishes. */
export function tempDir(prefix?: string): Promise<string> {
  return running().tempDir(prefix);
}

/** `closable`, closed when the running test finishes (before its temp folders are removed). */
export function closeAfter<T extends Closable>(closable: T): T {
  return running().closeAfter(closable);
}

/** `new SessionStore(options)`, closed when the running test finishes. */
export function openStore<E extends EventSchemas = {}>(options: SessionStoreOptions<E>): SessionStore<E> {
  return closeAfter(new SessionStore<E>(onChosenBackend(options, closeAfter)));
}

/**
 * What an adapter that can open its own store on a folder is given: `{ root }` on the fs backend; else a store of
 * this fixture on `root`, on the chosen backend (test/helpers/store-backends.ts), as the adapter's own is on fs.
 */
export function rootOrStore<E extends EventSchemas>(
  root: string,
  events: E,
): { root: string } | { store: SessionStore<E> } {
  return storeBackendKind() === "fs" ? { root } : { store: openStore<E>({ root, events }) };
}

/** A store on `options.root`, or else on a new temp folder (`prefix`), closed when the running test finishes. */
export async function tempStore<E extends EventSchemas = {}>(
  options: Partial<SessionStoreOptions<E>> = {},
  prefix?: string,
): Promise<{ store: SessionStore<E>; root: string }> {
  const root = options.root ?? (await tempDir(prefix));
  return { store: openStore<E>({ ...options, root }), root };
}

/** {@link WorkspaceWithStore} in a new temp folder; its stores are closed when the running test finishes. */
export function workspaceWithStore(prefix = "agent-tape-ws-"): Promise<WorkspaceWithStore> {
  return workspaceIn(running(), prefix);
}

/** The `tempDir` of either door, for helpers that are handed one. */
export type TempDir = (prefix?: string) => Promise<string>;
/** The `openStore` of either door, for helpers that are handed one. */
export type OpenStore = <E extends EventSchemas = {}>(options: SessionStoreOptions<E>) => SessionStore<E>;

// ---- the same, as fixtures of the test's own context --------------------------------------

interface Fixtures {
  leftovers: Leftovers;
  tempDir: TempDir;
  closeAfter: <T extends Closable>(closable: T) => T;
  openStore: OpenStore;
  workspace: (prefix?: string) => Promise<WorkspaceWithStore>;
}

export const test = base.extend<Fixtures>({
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads the fixtures a fixture needs from this pattern
  leftovers: async ({}, use) => {
    const leftovers = new Leftovers();
    try {
      await use(leftovers);
    } finally {
      await leftovers.clear();
    }
  },
  tempDir: async ({ leftovers }, use) => use((prefix) => leftovers.tempDir(prefix)),
  closeAfter: async ({ leftovers }, use) => use((closable) => leftovers.closeAfter(closable)),
  openStore: async ({ leftovers }, use) =>
    use(<E extends EventSchemas = {}>(options: SessionStoreOptions<E>) => {
      const closeAfter = <T extends Closable>(closable: T) => leftovers.closeAfter(closable);
      return closeAfter(new SessionStore<E>(onChosenBackend(options, closeAfter)));
    }),
  workspace: async ({ leftovers }, use) => use((prefix = "agent-tape-ws-") => workspaceIn(leftovers, prefix)),
});
export const it = test;
