// Real shell commands (sh, sed, git: child processes) in a temp workspace, each wrapped in
// aroundCommand; after all of them, a rewind to every earlier point must give back the whole tree
// as it was (bytes, modes, links, empty folders), and its undo the latest tree, byte for byte.
// Process tier: the 500-file generator makes each rewind and undo cost ~1 s on a busy machine.
import { execFileSync } from "node:child_process";
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { CheckpointStore, type SessionStore, rewind, undoRewind } from "../../../src/index.js";
import { treeOf } from "../../helpers/workspace-tree.js";
import { openStore, tempDir } from "../../helpers/fixture.js";

let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let sessionId: string;

beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-shell-"));
  workspace = join(base, "ws");
  await mkdir(join(workspace, "dir/deep"), { recursive: true });
  await writeFile(join(workspace, "a.txt"), "hello world\n");
  await writeFile(join(workspace, "dir/one.txt"), "one\n");
  await writeFile(join(workspace, "dir/deep/two.txt"), "two\n");
  await writeFile(join(workspace, "shared.txt"), "on main\n");
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "main");
  git("checkout", "-q", "-b", "other");
  await writeFile(join(workspace, "shared.txt"), "on other\n");
  await writeFile(join(workspace, "only-on-other.txt"), "other\n");
  git("add", "-A");
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "other");
  git("checkout", "-q", "main");
  store = openStore({ root: join(base, "sessions") });
  checkpoints = new CheckpointStore(store);
  sessionId = (await store.create({ workspace })).id;
});

function git(...args: string[]): void {
  execFileSync("git", args, { cwd: workspace, stdio: "ignore" });
}

function shell(command: string): Promise<void> {
  return checkpoints.aroundCommand(sessionId, { tool: "bash", callId: command }, () => {
    execFileSync("sh", ["-c", command], { cwd: workspace, stdio: "ignore" });
  });
}

const COMMANDS = [
  "sed -i 's/hello/bye/' a.txt",
  "rm -rf dir",
  "mkdir -p a/b && echo x > a/b/c",
  "mv a b",
  "chmod +x b/b/c",
  "ln -s b/b/c link",
  "git checkout -q other",
  "mkdir gen && i=0; while [ $i -lt 500 ]; do echo $i > gen/f$i.txt; i=$((i+1)); done",
  "mkdir -p empty/inner && rm a.txt",
];

describe("shell commands are rewindable", () => {
  it(`rewinds each of ${COMMANDS.length} commands to every earlier point, and undo gives back the last tree`, {
    timeout: 120_000,
  }, async () => {
    await store.append(sessionId, { type: "message", payload: { role: "user", content: "go" } });
    const points: { sequence: number; tree: Record<string, string> }[] = [];
    const mark = async () =>
      points.push({ sequence: (await store.get(sessionId))!.lastSequence, tree: await treeOf(workspace) });
    await mark();
    for (const command of COMMANDS) {
      await shell(command);
      await mark();
    }
    const last = points.at(-1)!;
    expect(Object.keys(last.tree)).toContain("gen/f499.txt");

    for (const point of points.slice(0, -1).reverse()) {
      await rewind(store, sessionId, { toSequence: point.sequence, mode: "files" });
      expect(await treeOf(workspace), `rewound to #${point.sequence}`).toEqual(point.tree);
      await undoRewind(store, sessionId);
      expect(await treeOf(workspace), `undone from #${point.sequence}`).toEqual(last.tree);
    }
  });

  it("records each command's changes once: created absent, changed and deleted with their before-state", async () => {
    await shell("mkdir -p a/b && echo x > a/b/c");
    const event = await checkpoints.aroundCommand(sessionId, { tool: "bash" }, async () => {
      execFileSync("sh", ["-c", "rm -rf dir && chmod 600 a.txt && ln -s a.txt l"], { cwd: workspace });
      return "done";
    });
    expect(event).toBe("done");
    const [last, after] = (await store.readAll(sessionId)).slice(-2);
    expect(after!.type).toBe("session_file_states");
    expect(last!.type).toBe("session_checkpoint");
    const files = (last!.payload as { files: { path: string; kind: string; mode?: number }[] }).files;
    expect(files.map((f) => [f.path, f.kind])).toEqual([
      ["a.txt", "blob"],
      ["dir", "directory"],
      ["dir/deep", "directory"],
      ["dir/deep/two.txt", "blob"],
      ["dir/one.txt", "blob"],
      ["l", "absent"],
    ]);
    expect(files[0]!.mode).toBe(0o644);
  });

  it("a command that changes nothing tracked appends nothing", async () => {
    const before = (await store.get(sessionId))!.lastSequence;
    await shell("true");
    await shell("ls > /dev/null");
    expect((await store.get(sessionId))!.lastSequence).toBe(before);
  });
});
