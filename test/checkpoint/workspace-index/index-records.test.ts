import { mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CheckpointStore, type CheckpointPayload, type ScanReport } from "../../../src/index.js";
import { rowsOf } from "../../../src/checkpoint/workspace-index/index-columns.js";
import { openStore, tempDir } from "../../helpers/fixture.js";

// The workspace index's records: deflated once their JSON passes 4 KB
// (src/checkpoint/workspace-index/packed-record.ts),
// read back by a new store, and, when damaged, lost rather than trusted (the next scan is then cold).

let base: string;
let workspace: string;
let root: string;
let sessionId: string;

const FILES = 1200; // about 150 bytes of index a file: well past the 4 KB from which a record is deflated
const CHANGED = 40; // a delta of 40 rows: deflated too, and under a quarter of the base (else a base is written)

// The workspaces are made before any test, one a test, then left past the racy window (2 s: a stat that new is not
// trusted, so the entry is read again and its row changes once it is old enough). Made in each test, a slow run
// (the disk, Node 22) saw batches of its 1,200 files age out scan by scan: deltas of 100 rows for 40 changed, past a
// quarter of the base, and a base written where the test looks for a delta.
const TESTS = 8;
const made: string[] = [];
let shared: string;
beforeAll(async () => {
  shared = await realpath(await mkdtemp(join(tmpdir(), "agent-tape-index-records-")));
  for (let t = 0; t < TESTS; t++) {
    const dir = join(shared, `ws-${t}`);
    for (let d = 0; d < 4; d++) {
      await mkdir(join(dir, `src/m${d}`), { recursive: true });
      for (let f = 0; f < FILES / 4; f++)
        await writeFile(join(dir, `src/m${d}/f${f}.ts`), `export const v = ${d * 1000 + f};\n`); // own blobs
    }
    made.push(dir);
  }
  await new Promise((resolve) => setTimeout(resolve, 2100));
}, 120_000);
afterAll(() => rm(shared, { recursive: true, force: true }));

beforeEach(async () => {
  base = await realpath(await tempDir("agent-tape-index-records-"));
  const next = made.shift();
  if (next === undefined) throw new Error("more tests than workspaces made: raise TESTS");
  workspace = join(base, "ws");
  await rename(next, workspace); // the files' own stats stay as they were
  root = join(base, "sessions");
  const store = openStore({ root });
  sessionId = (await store.create({ workspace })).id;
  await command(new CheckpointStore(store), () => writeFile(join(workspace, "src/m0/f0.ts"), "first\n"));
});

const recordFile = (name: string) => join(root, sessionId, "records", `${name}.json`);
const readRecord = async (name: string) => JSON.parse(await readFile(recordFile(name), "utf8"));
async function newestDelta(): Promise<string> {
  const names = (await readdir(join(root, sessionId, "records"))).filter((n) =>
    /^workspace-index\.\d{9}\.json$/.test(n),
  );
  return names
    .sort()
    .at(-1)!
    .replace(/\.json$/, "");
}

/** Runs `change` as a shell command would, in a store new to the session (another process's, as far as it knows). */
async function command(checkpoints: CheckpointStore, change: () => Promise<unknown>): Promise<void> {
  await checkpoints.aroundCommand(sessionId, { tool: "bash" }, change);
}

/** CHANGED files rewritten: a delta past the 4 KB from which it is deflated. */
async function changeSome(): Promise<void> {
  for (let d = 0; d < 4; d++)
    for (let f = 0; f < CHANGED / 4; f++) await writeFile(join(workspace, `src/m${d}/f${f}.ts`), `changed ${d} ${f}\n`);
}

/** A store new to the session and the reports of its scans. */
function freshStore(): { checkpoints: CheckpointStore; scans: ScanReport[]; last: () => Promise<string[]> } {
  const store = openStore({ root });
  const scans: ScanReport[] = [];
  const checkpoints = new CheckpointStore(store, { workspaceIndex: { onScan: (report) => scans.push(report) } });
  const last = async () => {
    const events = await store.readAll(sessionId);
    const checkpoint = events.filter((e) => e.type === "session_checkpoint").at(-1)!;
    return (checkpoint.payload as CheckpointPayload).files.map((f) => `${f.path} ${f.kind}`);
  };
  return { checkpoints, scans, last };
}

describe("the workspace index's records", () => {
  it("a large one is stored deflated, and a new store reads it back: its next scan finds nothing changed", async () => {
    const stored = await readRecord("workspace-index");
    expect(stored).toMatchObject({ v: 2, generation: expect.any(Number) });
    const inflated = inflateRawSync(Buffer.from(stored.deflated, "base64")).toString("utf8");
    expect(JSON.parse(inflated)).toMatchObject({ v: 2, workspace });
    expect(JSON.parse(inflated).columns.rest.length).toBeGreaterThan(FILES);
    // Stored in base64, deflated: 0.485-0.487 of the JSON here, 0.50 once in CI (the times and inode numbers are
    // the least compressible part since the base is by columns); written plain it would be all of it.
    expect(JSON.stringify(stored).length).toBeLessThan(inflated.length * 0.6);

    const { checkpoints, scans, last } = freshStore();
    await command(checkpoints, () => writeFile(join(workspace, "src/m1/f3.ts"), "edited\n"));
    expect(scans.map((s) => [s.phase, s.changed])).toEqual([
      ["before", 0],
      ["after", 1],
    ]);
    expect(await last()).toEqual(["src/m1/f3.ts blob"]);
  });

  it("a large delta is deflated too, and read back with its base", async () => {
    const first = freshStore();
    await command(first.checkpoints, changeSome);
    expect(await readRecord(await newestDelta())).toMatchObject({ v: 2 });

    const { checkpoints, scans } = freshStore();
    await command(checkpoints, () => writeFile(join(workspace, "src/m2/f0.ts"), "again\n"));
    expect(scans.map((s) => s.changed)).toEqual([0, 1]);
  });

  it("the base is stored by columns, in under 85 % of the room its rows took", async () => {
    const stored = await readRecord("workspace-index");
    const { columns, ...rest } = JSON.parse(inflateRawSync(Buffer.from(stored.deflated, "base64")).toString("utf8"));
    const rows = rowsOf(columns)!;
    expect(rows.length).toBeGreaterThan(FILES);
    expect(rows.map((row) => row[0])).toContain("src/m1/f3.ts");
    // The same entries as rows (the form before columns), deflated as the record deflates them.
    const asRows = deflateRawSync(JSON.stringify({ ...rest, v: 1, entries: rows }), { level: 1 }).toString("base64");
    expect(stored.deflated.length).toBeLessThan(asRows.length * 0.85);
  });

  it("a base written as rows (before columns) is read as before", async () => {
    const stored = await readRecord("workspace-index");
    const { columns, ...rest } = JSON.parse(inflateRawSync(Buffer.from(stored.deflated, "base64")).toString("utf8"));
    const deflated = deflateRawSync(JSON.stringify({ ...rest, v: 1, entries: rowsOf(columns) }));
    await writeFile(
      recordFile("workspace-index"),
      JSON.stringify({ ...stored, deflated: deflated.toString("base64") }),
    );
    const { checkpoints, scans, last } = freshStore();
    await command(checkpoints, () => writeFile(join(workspace, "src/m1/f3.ts"), "edited\n"));
    expect(scans.map((s) => s.changed)).toEqual([0, 1]);
    expect(await last()).toEqual(["src/m1/f3.ts blob"]);
  });

  it("one written before deflating (plain JSON) is read as before", async () => {
    const stored = await readRecord("workspace-index");
    await writeFile(recordFile("workspace-index"), inflateRawSync(Buffer.from(stored.deflated, "base64")));
    const { checkpoints, scans } = freshStore();
    await command(checkpoints, () => writeFile(join(workspace, "src/m1/f3.ts"), "edited\n"));
    expect(scans.map((s) => s.changed)).toEqual([0, 1]);
  });

  for (const damage of ["base", "delta"] as const)
    it(`a damaged deflated ${damage} loses the index: a cold next scan, the command recorded exactly`, async () => {
      let name = "workspace-index";
      if (damage === "delta") {
        const first = freshStore();
        await command(first.checkpoints, changeSome);
        name = await newestDelta();
      }
      const stored = await readRecord(name);
      expect(stored.v).toBe(2);
      stored.deflated = Buffer.from("not deflate at all, planted or torn").toString("base64");
      await writeFile(recordFile(name), JSON.stringify(stored));

      const { checkpoints, scans, last } = freshStore();
      await command(checkpoints, () => writeFile(join(workspace, "src/m1/f3.ts"), "edited\n"));
      expect(scans[0]!.changed).toBeGreaterThan(FILES); // cold: every path found anew
      expect(scans[1]!.changed).toBe(1);
      expect(await last()).toEqual(["src/m1/f3.ts blob"]);
    });
});

// Each delta is a file of its own, taking whole blocks: in the bench's 5k-file session 37 deltas of 4-5 KB took
// 300 KiB beside a base of 352 KiB. They are folded into a new base once they take a quarter of its room.
describe("the deltas since the base", () => {
  const blocks = (text: string) => Math.ceil(text.length / 4096) * 4096;
  async function roomTaken(): Promise<{ base: number; deltas: number; baseGeneration: number }> {
    const base = await readFile(recordFile("workspace-index"), "utf8");
    const baseGeneration = (JSON.parse(base) as { generation: number }).generation;
    let deltas = 0;
    for (const name of await readdir(join(root, sessionId, "records"))) {
      const generation = /^workspace-index\.(\d{9})\.json$/.exec(name)?.[1];
      if (generation !== undefined && Number(generation) > baseGeneration)
        deltas += blocks(await readFile(join(root, sessionId, "records", name), "utf8"));
    }
    return { base: blocks(base), deltas, baseGeneration };
  }

  it("take at most a quarter of the base's room, whichever store wrote them; the index reads back whole", async () => {
    const stores = [freshStore(), freshStore()];
    const bases = new Set<number>();
    for (let round = 0; round < 8; round++) {
      const { checkpoints, last } = stores[round % 2]!;
      const file = `src/m${round % 4}/f${100 + round}.ts`;
      await command(checkpoints, () => writeFile(join(workspace, file), `round ${round}\n`));
      expect(await last()).toEqual([`${file} blob`]);
      const room = await roomTaken();
      expect(room.deltas).toBeLessThanOrEqual(room.base / 4);
      bases.add(room.baseGeneration);
    }
    expect(bases.size).toBeGreaterThan(1); // folded well before the 64th generation
    const { checkpoints, scans } = freshStore();
    await command(checkpoints, () => writeFile(join(workspace, "src/m0/f0.ts"), "last\n"));
    expect(scans.map((s) => s.changed)).toEqual([0, 1]);
  });
});
