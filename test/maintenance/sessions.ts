import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, type SessionStore, type SessionStoreOptions } from "../../src/index.js";
import { fsBackend, memoryBackend } from "../../src/backend/index.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { chosenBackendOn, storeBackendKind } from "../helpers/store-backends.js";

export const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");

export type BackendKind = "fs" | "memory" | "postgres";
/**
 * The backends the suites here run over: fs and memory; or, in a file that put the stores on PostgreSQL
 * (test/helpers/store-backends.ts), PostgreSQL alone.
 */
export const BACKENDS: readonly BackendKind[] = storeBackendKind() === "fs" ? ["fs", "memory"] : ["postgres"];

export interface Seeded {
  store: SessionStore;
  checkpoints: CheckpointStore;
  /** The store's folder (undefined for memory): the fs backend's root, or what names PostgreSQL's schema. */
  root: string | undefined;
  workspace: string;
  id: string;
  /** Closes the store and the backend it was given. */
  close(): Promise<void>;
}

/**
 * A session as an agent leaves it: 1 message, 2 checkpoint of a.txt ("one\n"), then a.txt says
 * "two\n" and 3 message. The caller closes it.
 */
export async function seed(
  kind: BackendKind,
  options: Partial<SessionStoreOptions> & { root?: string } = {},
): Promise<Seeded> {
  const base = await tempDir("agent-tape-maintenance-");
  const workspace = join(base, "workspace");
  await mkdir(workspace);
  const root = kind === "memory" ? undefined : (options.root ?? join(base, "root"));
  const backend =
    options.backend ??
    (kind === "fs" ? fsBackend({ root: root! }) : kind === "postgres" ? chosenBackendOn(root!) : memoryBackend());
  const store = openStore({ ...options, backend });
  // These tests count events; after-states are tested in test/rewind/conflicts.test.ts.
  const checkpoints = new CheckpointStore(store, { afterState: false });
  const { id } = await store.create({ workspace });
  await store.append(id, { type: "message", payload: { role: "user", content: "make a.txt say two" } });
  await writeFile(join(workspace, "a.txt"), "one\n");
  await checkpoints.around(id, { tool: "write_file", paths: ["a.txt"] }, () =>
    writeFile(join(workspace, "a.txt"), "two\n"),
  );
  await store.append(id, { type: "message", payload: { role: "assistant", content: "done" } });
  const close = async () => {
    await store.close();
    await backend.close();
  };
  return { store, checkpoints, root, workspace, id, close };
}

/** A blob no event names, as a capture cut short by a power loss leaves it. */
export async function plantOrphanBlob(s: Seeded, content: string): Promise<string> {
  const hash = sha256(content);
  await lockedAccess(s.store).withLockedSession(s.id, (locked) => locked.writeBlob(hash, Buffer.from(content)));
  return hash;
}
