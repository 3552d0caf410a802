// What a shell command did to ignored content (a `rm -rf build`, a `mv node_modules x`, a rewritten `.env`) cannot
// be rewound: the workspace index never stored it. It must not pass unseen: the command's checkpoint, the dry run
// and the rewind report name what ignored content was removed or changed (a bounded list and a count).
// docs/ARCHITECTURE.md, "Workspace index".
import { execFileSync } from "node:child_process";
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { CheckpointStore, type SessionStore, rewind, type CheckpointPayload } from "../../../src/index.js";
import { cli } from "../../cli/harness.js";
import { closeAfter, openStore, tempDir } from "../../helpers/fixture.js";

let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let sessionId: string;
let root: string;

async function setUp(watch: boolean): Promise<void> {
  const base = await realpath(await tempDir("agent-tape-ignored-"));
  workspace = join(base, "ws");
  await mkdir(join(workspace, "build"), { recursive: true });
  await mkdir(join(workspace, "node_modules/pkg"), { recursive: true });
  await mkdir(join(workspace, "src"), { recursive: true });
  await writeFile(join(workspace, ".gitignore"), "build/\nnode_modules/\n.env\n*.log\n");
  await writeFile(join(workspace, "build/out.js"), "built\n");
  await writeFile(join(workspace, "node_modules/pkg/index.js"), "module\n");
  await writeFile(join(workspace, ".env"), "SECRET=1\n");
  await writeFile(join(workspace, "src/a.txt"), "a\n");
  root = join(base, "sessions");
  store = openStore({ root });
  checkpoints = closeAfter(new CheckpointStore(store, { workspaceIndex: { watch } }));
  sessionId = (await store.create({ workspace })).id;
  await store.append(sessionId, { type: "message", payload: { role: "user", content: "start" } });
}

const sh = (command: string) => () => execFileSync("sh", ["-c", command], { cwd: workspace, stdio: "ignore" });
async function lastCheckpoint(): Promise<CheckpointPayload | undefined> {
  const events = await store.readAll(sessionId, { types: ["session_checkpoint"] });
  return events.at(-1)?.payload as CheckpointPayload | undefined;
}

for (const watch of [false, true])
  describe(`ignored content a command destroyed (${watch ? "watched" : "walked"} scans)`, () => {
    beforeEach(() => setUp(watch));

    it("rm -rf build: a checkpoint names it removed, though nothing tracked changed", async () => {
      await checkpoints.aroundCommand(sessionId, { tool: "bash" }, sh("rm -rf build"));
      const checkpoint = await lastCheckpoint();
      expect(checkpoint?.files).toEqual([]);
      expect(checkpoint?.ignoredChanges).toEqual({ count: 1, paths: [{ path: "build", change: "removed" }] });
    });

    it("mv node_modules x and a rewritten .env: named with tracked changes, in dry run and report", async () => {
      const start = (await store.get(sessionId))!.lastSequence;
      await checkpoints.aroundCommand(sessionId, { tool: "bash" }, sh("mv node_modules x && echo 'SECRET=2' > .env"));
      const checkpoint = await lastCheckpoint();
      expect(checkpoint?.files.map((f) => f.path)).toContain("x");
      expect(checkpoint?.ignoredChanges).toEqual({
        count: 2,
        paths: [
          { path: ".env", change: "changed" },
          { path: "node_modules", change: "removed" },
        ],
      });
      await checkpoints.aroundCommand(sessionId, { tool: "bash" }, sh("rm -rf build; echo more > src/a.txt"));

      const dry = await rewind(store, sessionId, { toSequence: start, dryRun: true });
      const expected = {
        count: 3,
        paths: [
          { path: ".env", change: "changed" },
          { path: "build", change: "removed" },
          { path: "node_modules", change: "removed" },
        ],
      };
      expect(dry.ignoredChanges).toEqual(expected);
      const shown = await cli(["rewind", sessionId, "--to", String(start), "--dry-run", "--root", root]);
      expect(shown.stdout).toContain("Not rewound: ignored content the commands removed or changed (never stored), 3:");
      expect(shown.stdout).toContain("  node_modules (removed)");
      const report = await rewind(store, sessionId, { toSequence: start });
      expect(report.ignoredChanges).toEqual(expected);
    });

    it("a command that changes nothing ignored records nothing about it", async () => {
      await checkpoints.aroundCommand(sessionId, { tool: "bash" }, sh("echo b > src/b.txt && cat .env > /dev/null"));
      expect((await lastCheckpoint())?.ignoredChanges).toBeUndefined();
      await checkpoints.aroundCommand(sessionId, { tool: "bash" }, sh("true"));
      expect((await store.readAll(sessionId, { types: ["session_checkpoint"] })).length).toBe(1);
    });

    it("the list is bounded, the count is not: 40 ignored logs removed", async () => {
      for (let i = 0; i < 40; i++) await writeFile(join(workspace, `src/run-${String(i).padStart(2, "0")}.log`), "x");
      await checkpoints.aroundCommand(sessionId, { tool: "bash" }, sh("rm src/*.log"));
      const changes = (await lastCheckpoint())?.ignoredChanges;
      expect(changes?.count).toBe(40);
      expect(changes?.paths.length).toBe(20);
      expect(changes?.paths[0]).toEqual({ path: "src/run-00.log", change: "removed" });
    });
  });
