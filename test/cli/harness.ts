import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, type SessionStore } from "../../src/index.js";
import type { StorageBackend } from "../../src/backend/index.js";
import { runCli, type CliIO } from "../../src/cli/run-cli.js";
import { openStore, tempDir } from "../helpers/fixture.js";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process against a root, collecting what it prints. */
export async function cli(
  args: readonly string[],
  io: Partial<Omit<CliIO, "stdout" | "stderr">> = {},
): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: io.env ?? {},
    ...(io.isTTY !== undefined && { isTTY: io.isTTY }),
    ...(io.now !== undefined && { now: io.now }),
    ...(io.ask !== undefined && { ask: io.ask }),
  });
  return { code, stdout, stderr };
}

export interface Seeded {
  root: string;
  workspace: string;
  id: string;
}

/**
 * A session as an agent leaves it, on a real root and workspace (`afterState`: an after-state is #4):
 *   1 message (user)   2 tool_call   3 checkpoint: a.txt "one", b.txt absent
 *   4 tool_result      5 message (assistant)
 * after which a.txt says "two" and b.txt exists.
 */
export async function seedSession(
  options: { root?: string; title?: string; afterState?: boolean; backend?: StorageBackend } = {},
): Promise<Seeded> {
  const base = await tempDir("agent-tape-cli-");
  const root = options.root ?? join(base, "root");
  const workspace = join(base, "workspace");
  await mkdir(workspace);
  await writeFile(join(workspace, "a.txt"), "one\n");
  // A backend given (a PostgreSQL one) holds the session instead of `root`; the store leaves it open.
  const store = openStore(options.backend ? { backend: options.backend } : { root });
  try {
    // The CLI tests count events: after-states (one more, #4, then the result is #5) only when asked for.
    const checkpoints = new CheckpointStore(store, { afterState: options.afterState ?? false });
    const { id } = await store.create({ title: options.title ?? "fix the failing test", workspace });
    await store.append(id, { type: "message", payload: { role: "user", content: "make a.txt say two" } });
    await store.append(id, {
      type: "tool_call",
      payload: { callId: "c1", name: "write_files", input: { paths: ["a.txt", "b.txt"] } },
    });
    await checkpoints.around(id, { tool: "write_files", paths: ["a.txt", "b.txt"], callId: "c1" }, async () => {
      await writeFile(join(workspace, "a.txt"), "two\n");
      await writeFile(join(workspace, "b.txt"), "new file\n");
    });
    await store.append(id, { type: "tool_result", payload: { callId: "c1", output: "wrote 2 files" } });
    await store.append(id, { type: "message", payload: { role: "assistant", content: "Done." } });
    return { root, workspace, id };
  } finally {
    await store.close();
  }
}

/** Opens a store on `root` for the duration of `fn`. */
export async function withStore<T>(root: string, fn: (store: SessionStore) => Promise<T>): Promise<T> {
  const store = openStore({ root });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
