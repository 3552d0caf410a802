import { execFileSync } from "node:child_process";
import { mkdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { CheckpointStore, type SessionStore, rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/byte-tree.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// Paths longer than PATH_MAX (4096 bytes here) are walked, captured, restored and removed like any other: each
// is reached through a folder descriptor held open (docs/ARCHITECTURE.md, "Confinement", any depth).

let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let sessionId: string;
let base: string;

beforeEach(async () => {
  base = await realpath(await tempDir("agent-tape-deep-"));
  workspace = join(base, "ws");
  await mkdir(workspace);
  store = openStore({ root: join(base, "sessions") });
  checkpoints = new CheckpointStore(store);
  sessionId = (await store.create({ workspace })).id;
});

const sh = (command: string) => execFileSync("sh", ["-c", command], { cwd: workspace, stdio: "ignore" });
const command = (script: string) => checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh(script));
const head = async () => (await store.get(sessionId))!.lastSequence;

/** 40 folders of 120 bytes below `top` (~4.9 KB, past PATH_MAX), a file halfway and two at the bottom. */
const DEEP = (top: string) =>
  `mkdir ${top} && cd ${top} && for i in $(seq 40); do ` +
  `mkdir ${"d".repeat(116)}$i && cd ${"d".repeat(116)}$i; ` +
  `if [ $i = 20 ]; then echo half > half.txt; fi; done; ` +
  `echo bottom > bottom.txt && ln -s bottom.txt link && mkdir empty`;

const deepest = (tree: Record<string, string>) => Math.max(...Object.keys(tree).map((p) => p.length));

describe("paths longer than PATH_MAX", () => {
  it("a command creating a deep tree is rewound (all of it removed) and undone (all of it back)", async () => {
    await command("true");
    const target = await head();
    await command(DEEP("top"));
    const made = byteTreeOf(workspace);
    expect(deepest(made)).toBeGreaterThan(4096);
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual({});
    await undoRewind(store, sessionId);
    expect(byteTreeOf(workspace)).toEqual(made);
  });

  it("a command deleting a deep tree is rewound byte for byte, and undone", async () => {
    sh(DEEP("top"));
    await command("true");
    const before = byteTreeOf(workspace);
    const target = await head();
    await command("rm -rf top");
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(before);
    await undoRewind(store, sessionId);
    expect(byteTreeOf(workspace)).toEqual({});
  });

  it("an edit at the bottom of a deep tree by a command is recorded and rewound", async () => {
    sh(DEEP("top"));
    await command("true");
    const before = byteTreeOf(workspace);
    const target = await head();
    await command(
      `cd top && for d in d*; do :; done; find . -name bottom.txt -exec sh -c 'echo more >> "$1"' _ {} \\;`,
    );
    expect(byteTreeOf(workspace)).not.toEqual(before);
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(before);
  });

  it("a tool capture of a deep folder, then its removal, is rewound", async () => {
    sh(DEEP("top"));
    const before = byteTreeOf(workspace);
    const target = await head();
    await checkpoints.around(sessionId, { tool: "rm", paths: ["top"] }, async () => sh("rm -rf top"));
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(before);
  });
});
