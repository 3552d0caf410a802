import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { CheckpointStore, type SessionStore, rewind, undoRewind, type CheckpointPayload } from "../../src/index.js";
import { byteTreeOf } from "../helpers/byte-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

// Names are bytes: a name that is not valid UTF-8 is tracked, recorded, rewound and undone exactly
// (docs/ARCHITECTURE.md, "On disk", names on the tape).

let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let sessionId: string;
let root: string;

beforeEach(async () => {
  ({ workspace, root, store, checkpoints } = await workspaceWithStore("agent-tape-names-"));
  sessionId = (await store.create({ workspace })).id;
});

/** Runs a shell command in the workspace; `\377` and friends in printf make the bytes. */
const sh = (command: string) => execFileSync("sh", ["-c", command], { cwd: workspace, stdio: "ignore" });
const command = (script: string) => checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh(script));
const head = async () => (await store.get(sessionId))!.lastSequence;

const HOSTILE = [
  `touch "$(printf 'bad-\\377.txt')"`,
  `mkdir "$(printf 'dir-\\377')"`,
  `printf 'inside\\n' > "$(printf 'dir-\\377/in-\\376\\375.txt')"`,
  `mkdir "$(printf 'dir-\\377/sub-\\300')"`,
  `printf 'deep\\n' > "$(printf 'dir-\\377/sub-\\300/x\\355\\240\\200')"`, // an encoded surrogate: not UTF-8
  `ln -s "$(printf 'target-\\377')" "$(printf 'link-\\376')"`,
  `printf 'plain\\n' > plain.txt`,
].join(" && ");

describe("names that are not UTF-8", () => {
  it("a command creating them is recorded, and a rewind removes every one of them; undo puts them back", async () => {
    await command("true"); // the index's first scan
    const empty = byteTreeOf(workspace);
    const target = await head();
    await command(HOSTILE);
    const made = byteTreeOf(workspace);
    expect(Object.keys(made)).toHaveLength(7);
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(empty);
    await undoRewind(store, sessionId);
    expect(byteTreeOf(workspace)).toEqual(made);
  });

  it("a command deleting them (find -delete) is rewound byte for byte, and undone", async () => {
    sh(HOSTILE);
    await command("true");
    const before = byteTreeOf(workspace);
    const target = await head();
    await command("find . -mindepth 1 -delete");
    expect(byteTreeOf(workspace)).toEqual({});
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(before);
    await undoRewind(store, sessionId);
    expect(byteTreeOf(workspace)).toEqual({});
  });

  it("an edit of a file so named is recorded under its exact name and rewound", async () => {
    sh(`printf 'one\\n' > "$(printf 'bad-\\377.txt')"`);
    await command("true");
    const before = byteTreeOf(workspace);
    const target = await head();
    await command(`printf 'two\\n' >> "$(printf 'bad-\\377.txt')"`);
    const event = (await store.readAll(sessionId)).filter((e) => e.type === "session_checkpoint").at(-1)!;
    const paths = (event.payload as CheckpointPayload).files.map((f) => f.path);
    expect(paths).toEqual(["bad-\udcff.txt"]);
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(before);
  });

  it("a tool capture of a folder so named snapshots what is below it, and a rewind restores it", async () => {
    sh(HOSTILE);
    const before = byteTreeOf(workspace);
    const target = await head();
    await checkpoints.around(sessionId, { tool: "rm", paths: ["dir-\udcff"] }, async () => sh(`rm -rf dir-*`));
    await rewind(store, sessionId, { toSequence: target, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(before);
  });

  it("the tape holds the name so that a reader of the line recovers its bytes", async () => {
    sh(`touch "$(printf 'bad-\\377.txt')"`);
    await command("true");
    await command(`rm -f bad-*`);
    const tape = await readFile(join(root, sessionId, "events.jsonl"), "utf8");
    const line = tape
      .split("\n")
      .filter((l) => l.includes('"type":"session_checkpoint"'))
      .at(-1)!;
    // in the checkpoint's table of paths (docs/format.md, "Payloads as rows"), escaped as JSON writes a lone surrogate
    expect(line).toContain(String.raw`"paths":["bad-\udcff.txt"]`);
  });
});

describe("names that are not UTF-8, with a watched workspace index", () => {
  it("commands creating, editing and deleting them are recorded through folder events, and rewound", async () => {
    checkpoints = new CheckpointStore(store, { workspaceIndex: { watch: true } });
    await command("true");
    const empty = byteTreeOf(workspace);
    const start = await head();
    await command(HOSTILE);
    const made = byteTreeOf(workspace);
    const afterMade = await head();
    await command(`printf 'more\\n' >> "$(printf 'dir-\\377/in-\\376\\375.txt')" && rm -f "$(printf 'bad-\\377.txt')"`);
    await rewind(store, sessionId, { toSequence: afterMade, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(made);
    await rewind(store, sessionId, { toSequence: start, mode: "files" });
    expect(byteTreeOf(workspace)).toEqual(empty);
  });
});
