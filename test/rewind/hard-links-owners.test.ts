// Hard links and owners across a rewind (docs/ARCHITECTURE.md, "Workspace index"). A restore writes a new file and
// renames it over the name, so (1) the file took the rewinding process's owner (root, in a harness running as
// root: every restored file of the user's became root's), and (2) names that shared an inode come back as separate
// files. Now a restore keeps the owner and group the name has when the process may set them, and the dry run and
// the report name each file a rewind splits from its hard-link group. Runs as root in tests and CI (chown works).
import { execFileSync } from "node:child_process";
import { chown, link, lstat, mkdir, readFile, realpath, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, expect, it } from "vitest";
import { CheckpointStore, type SessionStore, rewind, undoRewind } from "../../src/index.js";
import { closeAfter, openStore, tempDir } from "../helpers/fixture.js";

let workspace: string;
let store: SessionStore;
let checkpoints: CheckpointStore;
let id: string;

beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-links-owners-"));
  workspace = join(base, "ws");
  await mkdir(join(workspace, "d"), { recursive: true });
  await writeFile(join(workspace, "mine.txt"), "mine\n");
  await chown(join(workspace, "mine.txt"), 1000, 1001);
  await writeFile(join(workspace, "hard-1"), "linked\n");
  await link(join(workspace, "hard-1"), join(workspace, "d/hard-2"));
  store = openStore({ root: join(base, "sessions") });
  checkpoints = closeAfter(new CheckpointStore(store));
  id = (await store.create({ workspace })).id;
  await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
});

const sh = (command: string) => () => execFileSync("sh", ["-c", command], { cwd: workspace, stdio: "ignore" });
const owner = async (path: string) => {
  const info = await lstat(join(workspace, path));
  return `${info.uid}:${info.gid}`;
};

it.runIf(process.getuid?.() === 0)(
  "a restored file keeps its owner and group (a command's edit, a tool's edit)",
  async () => {
    await checkpoints.aroundCommand(id, { tool: "bash" }, sh("echo more >> mine.txt"));
    await checkpoints.around(id, { tool: "edit", paths: ["mine.txt"] }, () =>
      writeFile(join(workspace, "mine.txt"), "x"),
    );
    await rewind(store, id, { toSequence: 1, mode: "files" });
    expect(await readFile(join(workspace, "mine.txt"), "utf8")).toBe("mine\n");
    expect(await owner("mine.txt")).toBe("1000:1001");
    await undoRewind(store, id);
    expect(await readFile(join(workspace, "mine.txt"), "utf8")).toBe("x");
    expect(await owner("mine.txt")).toBe("1000:1001");
  },
);

it.runIf(process.getuid?.() === 0)(
  "a chown is rewound: a file, a folder and a link get their owner and group back, and undo gives the new ones",
  async () => {
    await writeFile(join(workspace, "d/f.txt"), "f\n");
    await symlink("mine.txt", join(workspace, "link"));
    await checkpoints.aroundCommand(id, { tool: "bash" }, () => {}); // the index knows the tree as it is
    const before = { "mine.txt": await owner("mine.txt"), d: await owner("d"), link: await owner("link") };
    await checkpoints.aroundCommand(id, { tool: "bash" }, sh("chown 1234:5678 mine.txt d && chown -h 4321:8765 link"));
    await checkpoints.around(id, { tool: "edit", paths: ["d/f.txt"] }, () => chown(join(workspace, "d/f.txt"), 77, 88));
    const after = { "mine.txt": "1234:5678", d: "1234:5678", link: "4321:8765", "d/f.txt": "77:88" };
    const head = await store.head(id);
    await rewind(store, id, { toSequence: 1, mode: "files" });
    expect({
      "mine.txt": await owner("mine.txt"),
      d: await owner("d"),
      link: await owner("link"),
      "d/f.txt": await owner("d/f.txt"),
    }).toEqual({ ...before, "d/f.txt": "0:0" });
    expect(await readFile(join(workspace, "mine.txt"), "utf8")).toBe("mine\n");
    await undoRewind(store, id);
    expect({
      "mine.txt": await owner("mine.txt"),
      d: await owner("d"),
      link: await owner("link"),
      "d/f.txt": await owner("d/f.txt"),
    }).toEqual(after);
    expect(await store.head(id)).toBeGreaterThan(head);
  },
);

it("a rewind that splits a hard-link group says so in the dry run and the report", async () => {
  await checkpoints.aroundCommand(id, { tool: "bash" }, sh("echo more >> hard-1 && echo other > mine.txt"));
  const dry = await rewind(store, id, { toSequence: 1, dryRun: true });
  expect(dry.hardLinksSplit).toEqual(["d/hard-2", "hard-1"]);
  const report = await rewind(store, id, { toSequence: 1 });
  expect(report.hardLinksSplit).toEqual(["d/hard-2", "hard-1"]);
  expect(await readFile(join(workspace, "hard-1"), "utf8")).toBe("linked\n");
  expect(await readFile(join(workspace, "d/hard-2"), "utf8")).toBe("linked\n");
  expect((await lstat(join(workspace, "hard-1"))).nlink).toBe(1); // split, as the report said
});

it("a hard-linked file too large for the undo snapshot, restored anyway, is named as split too", async () => {
  // The plan reads the files it replaces and takes their link count from that read; one it does not read (here,
  // over maxFileBytes) is looked at on its own.
  await checkpoints.aroundCommand(id, { tool: "bash" }, sh("echo more >> hard-1 && echo other > mine.txt"));
  await writeFile(join(workspace, "d/hard-2"), "x".repeat(4096)); // the same inode: hard-1 grows too
  const options = { toSequence: 1, maxFileBytes: 1024, allowUnrecoverable: true, onConflict: "overwrite" as const };
  const dry = await rewind(store, id, { ...options, dryRun: true });
  expect(dry.unrecoverable?.sort()).toEqual(["d/hard-2", "hard-1"]);
  expect(dry.hardLinksSplit).toEqual(["d/hard-2", "hard-1"]);
  const report = await rewind(store, id, options);
  expect(report.hardLinksSplit).toEqual(["d/hard-2", "hard-1"]);
  expect(await readFile(join(workspace, "hard-1"), "utf8")).toBe("linked\n");
  expect((await lstat(join(workspace, "hard-1"))).nlink).toBe(1);
});
