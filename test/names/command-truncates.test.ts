import { execFileSync } from "node:child_process";
import { beforeEach, expect, it } from "vitest";
import { type CheckpointStore, type SessionStore, rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/byte-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

// A file whose name is not UTF-8 that is there before the session starts, emptied by the first command: its
// content must be kept by the index's first scan under its exact name, so a rewind brings it back
// (docs/ARCHITECTURE.md, "Names and depths"). Found by the whole-workspace property with the non-utf8 family.

let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let sessionId: string;

beforeEach(async () => {
  ({ workspace, store, checkpoints } = await workspaceWithStore("agent-tape-truncates-"));
});

/** Runs a shell command in the workspace with /bin/sh; `\377` in printf makes the byte. */
const sh = (script: string) => execFileSync("/bin/sh", ["-c", script], { cwd: workspace, stdio: "ignore" });
const command = (script: string) => checkpoints.aroundCommand(sessionId, { tool: "bash" }, () => sh(script));
const head = async () => (await store.get(sessionId))!.lastSequence;
const BAD = `"$(printf 'bad-\\377.txt')"`;

it("a command truncating a file so named, in the index's first scan, is rewound to the file's content", async () => {
  sh(`printf 'bad\\n' > ${BAD} && printf 'a\\n' > a.txt && chmod 600 a.txt`);
  sessionId = (await store.create({ workspace })).id;
  await store.append(sessionId, { type: "message", payload: { role: "user", content: "start" } });
  const before = byteTreeOf(workspace);
  const target = await head();
  await command(`printf '' > ${BAD}`);
  const emptied = byteTreeOf(workspace);
  expect(emptied).not.toEqual(before);
  await rewind(store, sessionId, { toSequence: target, mode: "files" });
  expect(byteTreeOf(workspace)).toEqual(before);
  await undoRewind(store, sessionId);
  expect(byteTreeOf(workspace)).toEqual(emptied);
});

it("the same truncation after the first scan is rewound too", async () => {
  sh(`printf 'bad\\n' > ${BAD}`);
  sessionId = (await store.create({ workspace })).id;
  await command("true");
  const before = byteTreeOf(workspace);
  const target = await head();
  await command(`printf '' > ${BAD}`);
  await rewind(store, sessionId, { toSequence: target, mode: "files" });
  expect(byteTreeOf(workspace)).toEqual(before);
});

// The other looks at workspace names outside the index, with such a name (docs/ARCHITECTURE.md, "Names and depths").

it("a tool path so named that is a link leading outside the workspace is refused", async () => {
  sh(`ln -s /etc/hostname "$(printf 'link-\\376')"`);
  sessionId = (await store.create({ workspace })).id;
  const capture = checkpoints.capture(sessionId, { tool: "edit", paths: ["link-\udcfe"], outsidePaths: "refuse" });
  await expect(capture).rejects.toMatchObject({ code: "PATH_OUTSIDE_WORKSPACE" });
});

it("a rewind that splits a hard-link group of a file so named says so", async () => {
  sh(`printf 'one\\n' > ${BAD} && ln ${BAD} other.txt`);
  sessionId = (await store.create({ workspace })).id;
  await command("true");
  const target = await head();
  await command(`printf 'two\\n' >> ${BAD}`);
  const report = await rewind(store, sessionId, { toSequence: target, mode: "files", dryRun: true });
  expect(report.hardLinksSplit).toEqual(["bad-\udcff.txt", "other.txt"]);
});
