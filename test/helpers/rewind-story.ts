import { chmod, mkdir, realpath, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, type SessionStore, type StoredEvent } from "../../src/index.js";
import { put, workspaceTree } from "./rewind-workspace.js";
import { openStore, tempDir } from "./fixture.js";
import { storedLogBytes } from "./store-backends.js";

/**
 * A session's story, told for real (docs/ARCHITECTURE.md, "Rewind intent"): after the target,
 * one file is edited five times, one is created, one deleted, one chmod'ed and a nested folder
 * removed, each edit behind a checkpoint, with the conversation going on around them. Everything
 * a test compares against is captured along the way.
 */
export interface Story {
  root: string;
  workspace: string;
  /** A folder beside the workspace: nothing a rewind does may reach it. */
  outside: string;
  store: SessionStore;
  checkpoints: CheckpointStore;
  id: string;
  /** The event rewound to: the assistant's reply once main.ts is at v0. */
  target: number;
  treeAtTarget: Record<string, string>;
  /** The workspace, the log (parsed and as bytes) and the blobs just before any rewind. */
  treeBefore: Record<string, string>;
  eventsBefore: StoredEvent[];
  logBytesBefore: Buffer;
  blobsBefore: string[];
}

const lines = (insertions: number, deletions: number) => ({ unit: "lines", insertions, deletions }) as const;

/**
 * Every path the story's rewind changes, as a rewind reports them (sorted by path), with what each does
 * to the file now in lines: a chmod changes no line, folders have none.
 */
export const STORY_CHANGES = [
  { path: "bin/run.sh", action: "restore", diff: lines(0, 0) },
  { path: "docs/guide/old.md", action: "restore", diff: lines(1, 0) },
  { path: "src/app/main.ts", action: "restore", diff: lines(1, 1) },
  { path: "src/app/new.ts", action: "delete", diff: lines(0, 1) },
  { path: "vendor", action: "restore" },
  { path: "vendor/pkg", action: "restore" },
  { path: "vendor/pkg/lib", action: "restore" },
  { path: "vendor/pkg/lib/index.js", action: "restore", diff: lines(1, 0) },
  { path: "vendor/pkg/package.json", action: "restore", diff: lines(1, 0) },
];

/** The story's line totals: the sum of STORY_CHANGES' diffs. */
export const STORY_DIFF_TOTALS = { lines: { insertions: 4, deletions: 2 }, bytes: { insertions: 0, deletions: 0 } };

/** Events appended after the story's target: 5 × (call, checkpoint, result), 4 checkpoints, 1 message. */
export const STORY_EVENTS_AFTER_TARGET = 20;

export async function tellTheStory(): Promise<Story> {
  const base = await realpath(await tempDir("agent-tape-rewind-"));
  const root = join(base, "sessions");
  const workspace = join(base, "ws");
  const outside = join(base, "outside");
  await mkdir(outside);
  await put(workspace, "README.md", "# demo\n");
  await put(workspace, "src/app/main.ts", "draft\n");
  await put(workspace, "docs/guide/old.md", "old docs\n");
  await put(workspace, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o644);
  await put(workspace, "vendor/pkg/lib/index.js", "module.exports = 1;\n");
  await put(workspace, "vendor/pkg/package.json", '{ "name": "pkg" }\n', 0o600);
  await chmod(join(workspace, "vendor/pkg"), 0o750);

  const store = openStore({ root });
  // The story's tests count its events; after-states are tested in test/rewind/conflicts.test.ts.
  const checkpoints = new CheckpointStore(store, { afterState: false });
  const { id } = await store.create({ workspace, title: "the story" });
  const file = (path: string) => join(workspace, path);

  await store.append(id, { type: "message", payload: { role: "user", content: "Bring main.ts to v0." } });
  // An edit before the target: its checkpoint must play no part in rewinding to the target.
  await checkpoints.around(id, { tool: "edit_file", paths: ["src/app/main.ts"] }, () =>
    writeFile(file("src/app/main.ts"), "v0\n"),
  );
  const target = (
    await store.append(id, { type: "message", payload: { role: "assistant", content: "main.ts is at v0." } })
  ).sequence;
  const treeAtTarget = await workspaceTree(workspace);

  for (let v = 1; v <= 5; v++) {
    const callId = `edit-${v}`;
    await store.append(id, {
      type: "tool_call",
      payload: { callId, name: "edit_file", input: { path: "src/app/main.ts", v } },
    });
    await checkpoints.around(id, { tool: "edit_file", paths: ["src/app/main.ts"], callId }, () =>
      writeFile(file("src/app/main.ts"), `v${v}\n`),
    );
    await store.append(id, { type: "tool_result", payload: { callId, output: "ok" } });
  }
  await checkpoints.around(id, { tool: "write_file", paths: ["src/app/new.ts"] }, () =>
    writeFile(file("src/app/new.ts"), "export {};\n"),
  );
  await checkpoints.around(id, { tool: "delete_file", paths: ["docs/guide/old.md"] }, () =>
    rm(file("docs/guide/old.md")),
  );
  await checkpoints.around(id, { tool: "chmod", paths: ["bin/run.sh"] }, () => chmod(file("bin/run.sh"), 0o755));
  await checkpoints.around(id, { tool: "rm_rf", paths: ["vendor"] }, () => rm(file("vendor"), { recursive: true }));
  await store.append(id, { type: "message", payload: { role: "assistant", content: "All done." } });

  return {
    root,
    workspace,
    outside,
    store,
    checkpoints,
    id,
    target,
    treeAtTarget,
    treeBefore: await workspaceTree(workspace),
    eventsBefore: await store.readAll(id),
    logBytesBefore: await logBytes(root, id),
    blobsBefore: (await store.backend.listBlobs(id)).sort(),
  };
}

/** The session's log as bytes, read directly (no lock, no recovery), whichever backend the store is on. */
export const logBytes = storedLogBytes;

/** The blob file of `hash` inside the session folder (for damaging it on purpose). */
export function blobFile(root: string, id: string, hash: string): string {
  return join(root, id, "blobs", hash.slice(0, 2), hash);
}
