import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CheckpointStore,
  isAgentTapeError,
  rewind,
  undoRewind,
  type RewindPayload,
  type RewindReport,
} from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { put } from "../helpers/rewind-workspace.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// An edit saved by another process after the rewind's conflict check and before it replaces or deletes the path
// (docs/ARCHITECTURE.md, "Conflicts"): a conflict found late, handled as `onConflict` says. "refuse": the rewind
// throws REWIND_CONFLICT and the save stays; "skip": the save stays, the rest is rewound; "overwrite": the save is
// replaced, and the undo holds it. Each round the save lands between the check and the write (the rewind is held
// at "intent-written" until the child has saved). Rounds (test/helpers/rounds.ts): 20 per case in npm test, 150 in
// the soak tier. On the code before, "refuse" rewound anyway and "overwrite" left the save in place (every round).
const ROUNDS = rounds(20, 150);

const children = childrenKilledAfterEach();

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Waits, blocking the event loop (the rewind is paused between two of its steps), until `path` exists. */
function blockUntilExists(path: string, ms: number): void {
  const until = Date.now() + ms;
  while (!existsSync(path) && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
}

type Policy = "refuse" | "skip" | "overwrite";

/**
 * A session whose one tool call made the workspace what `agentLeft` makes it, and a child that saves `saved` on
 * demand; each round rewinds to before that call, the save landing between the check and the write. Returns what
 * was lost, round by round.
 */
async function raceRounds(
  policy: Policy,
  layout: {
    /** The workspace before the tool call. */
    start: (ws: string) => Promise<void>;
    /** What the tool call does (and what each round puts back first: as the agent left it). */
    agentLeft: (ws: string) => Promise<void>;
    /** The paths the tool names. */
    paths: string[];
    /** The file the racing child saves (workspace-relative). */
    saved: string;
  },
): Promise<string[]> {
  const base = await realpath(await tempDir("agent-tape-edit-race-"));
  const workspace = join(base, "ws");
  const flags = join(base, "flags");
  await mkdir(flags);
  await mkdir(workspace);
  await layout.start(workspace);
  const store = openStore({ root: join(base, "sessions") });
  const lost: string[] = [];
  try {
    const { id } = await store.create({ workspace });
    await store.append(id, { type: "message", payload: { role: "user", content: "edit" } });
    await new CheckpointStore(store).around(id, { tool: "edit", paths: layout.paths, callId: "c1" }, () =>
      layout.agentLeft(workspace),
    );
    const saver = new Child("racing-saver.ts", [join(workspace, layout.saved), flags]);
    children.push(saver);
    // Started (tsx takes seconds on a loaded machine) before the first round blocks on it for at most 5 s.
    saver.process.stdin!.write("save warm-up\n");
    for (let waited = 0; !existsSync(join(flags, "saved-warm-up")) && waited < 120_000; waited += 50)
      await new Promise((done) => setTimeout(done, 50));
    for (let round = 0; round < ROUNDS; round++) {
      await layout.agentLeft(workspace); // as the agent left it: any conflict now is the late one
      const save = `save ${policy} ${round}\n`;
      const head = await store.head(id);
      let report: RewindReport | undefined;
      let refused: unknown;
      try {
        report = await rewind(store, id, {
          toSequence: 1,
          mode: "files",
          onConflict: policy,
          onProgress: (step) => {
            if (step !== "intent-written") return;
            saver.process.stdin!.write(`save ${policy} ${round}\n`);
            blockUntilExists(join(flags, `saved-${policy} ${round}`), 5000);
          },
        });
      } catch (error) {
        refused = error;
      }
      expect(existsSync(join(flags, `saved-${policy} ${round}`))).toBe(true);
      const now = await readFile(join(workspace, layout.saved), "utf8").catch(() => undefined);
      const where = `round ${round} (${policy})`;
      if (policy === "refuse") {
        if (!isAgentTapeError(refused, "REWIND_CONFLICT")) lost.push(`${where}: not refused: ${String(refused)}`);
        else expect(refused.conflicts.map((c) => c.change)).toContain("changed during the rewind");
        if (now !== save) lost.push(`${where}: file ${JSON.stringify(now)} after a refusal`);
        expect(await store.head(id)).toBe(head); // nothing appended
        continue;
      }
      if (refused !== undefined) throw refused;
      const late = report!.conflicts?.find((c) => c.path === layout.saved && c.change === "changed during the rewind");
      if (policy === "skip") {
        if (now !== save) lost.push(`${where}: file ${JSON.stringify(now)}, the save not left in place`);
        expect(late?.resolution).toBe("skip");
        continue;
      }
      // overwrite: rewound, and the save is in the undo
      let kept = false;
      for await (const event of store.read(id, { fromSequence: report!.markerSequence! }))
        kept ||= ((event.payload as RewindPayload).undo?.files ?? []).some(
          (f) => f.path === layout.saved && f.kind === "blob" && f.blob === sha256(save),
        );
      if (now === save) lost.push(`${where}: the save was left in place, not overwritten`);
      if (!kept) lost.push(`${where}: the save is not in the undo`);
      expect(late?.resolution).toBe("overwrite");
      await undoRewind(store, id, { onConflict: "overwrite" });
      const back = await readFile(join(workspace, layout.saved), "utf8").catch(() => undefined);
      if (back !== save) lost.push(`${where}: undo gave back ${JSON.stringify(back)}`);
    }
    saver.endInput();
    expect((await saver.done()).stderr).toBe("");
  } finally {
    await store.close();
  }
  return lost;
}

const aFile = {
  start: (ws: string) => put(ws, "notes.txt", "v0\n"),
  agentLeft: (ws: string) => writeFile(join(ws, "notes.txt"), "v1\n"),
  paths: ["notes.txt"],
  saved: "notes.txt",
};
// The rewind deletes a folder the tool made; the save makes a file inside it.
const aFolder = {
  start: async () => {},
  agentLeft: async (ws: string) => {
    await rm(join(ws, "made"), { recursive: true, force: true });
    await mkdir(join(ws, "made"));
    await writeFile(join(ws, "made/a.txt"), "a\n");
  },
  paths: ["made"],
  saved: "made/new.txt",
};

describe("an edit saved while a rewind runs (a real process saving between the check and the write)", () => {
  for (const policy of ["refuse", "skip", "overwrite"] as const) {
    it(`onConflict "${policy}", a file replaced: nothing lost (${ROUNDS} rounds)`, async () => {
      expect(await raceRounds(policy, aFile)).toEqual([]);
    }, 240_000);
    it(`onConflict "${policy}", a folder deleted: nothing lost (${ROUNDS} rounds)`, async () => {
      expect(await raceRounds(policy, aFolder)).toEqual([]);
    }, 240_000);
  }
});
