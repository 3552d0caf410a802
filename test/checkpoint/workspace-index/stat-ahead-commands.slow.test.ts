// Shell commands in a workspace large enough for the later scans to take their stats ahead on helper threads
// (stat-ahead.ts, from 4096 entries): each command's checkpoint names exactly the paths it changed, and a rewind
// to before them all gives back the tree byte for byte. The size is what this proves: below it no stat is taken
// ahead.
import { mkdirSync, writeFileSync } from "node:fs";
import { realpath, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind, type ScanReport } from "../../../src/index.js";
import { openStore, tempDir } from "../../helpers/fixture.js";
import { treeOf } from "../../helpers/workspace-tree.js";

const FOLDERS = 220;
const PER_FOLDER = 20;
const fileOf = (folder: number, i: number) => `pkg-${folder % 11}/mod-${folder}/file-${i}.ts`;

it("commands in a 4,400-file workspace: scans with stats taken ahead record exactly what changed", async () => {
  const base = await realpath(await tempDir("agent-tape-stat-ahead-commands-"));
  const workspace = join(base, "ws");
  // Made with synchronous calls: 4,400 files, a second less than one promise each.
  for (let folder = 0; folder < FOLDERS; folder++) {
    mkdirSync(join(workspace, `pkg-${folder % 11}/mod-${folder}`), { recursive: true });
    for (let i = 0; i < PER_FOLDER; i++) writeFileSync(join(workspace, fileOf(folder, i)), `// ${folder} ${i}\n`);
  }
  // Folders whose times are 2 s old: the first scan's listings are trusted by the next ones (stat-entries.ts).
  await new Promise((resolve) => setTimeout(resolve, 2100));
  const reports: ScanReport[] = [];
  const store = openStore({ root: join(base, "sessions") });
  const checkpoints = new CheckpointStore(store, { workspaceIndex: { onScan: (report) => reports.push(report) } });
  try {
    const { id } = await store.create({ workspace });
    const start = (await store.append(id, { type: "message", payload: { role: "user", content: "go" } })).sequence;
    const treeAtStart = await treeOf(workspace);
    await checkpoints.aroundCommand(id, { tool: "bash" }, async () => {}); // the first scan: every file read

    const commands: { run: () => Promise<void>; changed: string[] }[] = [
      {
        // In place: the folders' listings still hold, so these files' new stats come from the helpers.
        run: async () => {
          for (const folder of [3, 90, 219]) await writeFile(join(workspace, fileOf(folder, 7)), "rewritten\n");
        },
        changed: [fileOf(3, 7), fileOf(90, 7), fileOf(219, 7)],
      },
      {
        run: async () => {
          await rm(join(workspace, fileOf(5, 0)));
          await writeFile(join(workspace, "pkg-1/mod-12/new.ts"), "new\n");
          await writeFile(join(workspace, fileOf(150, 3)), "changed too\n");
        },
        changed: [fileOf(5, 0), "pkg-1/mod-12/new.ts", fileOf(150, 3)],
      },
      {
        run: async () => rename(join(workspace, "pkg-2/mod-13"), join(workspace, "pkg-2/moved")),
        changed: [
          "pkg-2/mod-13",
          "pkg-2/moved",
          ...Array.from({ length: PER_FOLDER }, (_, i) => [fileOf(13, i), `pkg-2/moved/file-${i}.ts`]).flat(),
        ],
      },
    ];
    for (const command of commands) {
      const started = await checkpoints.beforeCommand(id, { tool: "bash" });
      await command.run();
      const checkpoint = await checkpoints.afterCommand(started);
      const recorded = checkpoint!.payload.files.map((file) => file.path);
      expect(recorded.sort()).toEqual([...command.changed].sort());
    }
    // Every scan after the first took most of its stats ahead.
    const later = reports.slice(2);
    expect(later.length).toBe(2 * commands.length);
    for (const report of later) expect(report.statsAhead, JSON.stringify(report)).toBeGreaterThan(4000);

    const treeAfter = await treeOf(workspace);
    await rewind(store, id, { toSequence: start, mode: "files" });
    expect(await treeOf(workspace)).toEqual(treeAtStart);
    await undoRewind(store, id);
    expect(await treeOf(workspace)).toEqual(treeAfter);
  } finally {
    checkpoints.close();
    await store.close();
  }
}, 120_000);
