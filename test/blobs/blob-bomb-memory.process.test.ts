import { fsBackend } from "../../src/backend/index.js";
// Compression bombs in the blob store (docs/ARCHITECTURE.md, "Blobs"): four blob files of about 1 MB, each
// claiming to inflate to 1 GiB, planted where a session's checkpoints recorded 10-byte files. verify, show
// --diff, a dry run and a rewind each run in a child process of their own, and its peak resident memory
// must stay under PEAK_MB: inflating is capped by the size the checkpoint recorded, not the blob's claim.
// One run of each command (no rounds: the bomb is deterministic).
import { once } from "node:events";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createDeflateRaw } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { CheckpointStore } from "../../src/index.js";
import { childrenKilledAfterEach, runChild } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

childrenKilledAfterEach();

/** A CLI child (node, tsx and the library loaded) reads a small session in about 150 MB here; 1 GiB is the claim. */
const PEAK_MB = 400;
const CLAIM = 1024 ** 3;
const FILES = ["a.txt", "b.txt", "c.txt", "d.txt"];

let bomb: Buffer;
beforeAll(async () => {
  // The blob file format (src/backend/fs/blob-codec.ts): NUL "atz", method 1 (deflate-raw), the length in
  // 6 bytes, then the deflated bytes: here 1 GiB of zeros, deflated as a stream (never held whole).
  const header = Buffer.from([0x00, 0x61, 0x74, 0x7a, 1, 0, 0, 0, 0, 0, 0]);
  header.writeUIntBE(CLAIM, 5, 6);
  const deflate = createDeflateRaw({ level: 9 });
  const parts: Buffer[] = [header];
  deflate.on("data", (part: Buffer) => parts.push(part));
  const zeros = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < CLAIM; written += zeros.length)
    if (!deflate.write(zeros)) await once(deflate, "drain");
  deflate.end();
  await once(deflate, "end");
  bomb = Buffer.concat(parts);
}, 120_000);

async function bombedSession() {
  const base = await tempDir("agent-tape-bomb-");
  const root = join(base, "sessions");
  const workspace = join(base, "ws");
  // Each blob its own file: the bomb is a blob file's bytes (the pack's entries are checked as its tests say).
  const store = openStore({ backend: fsBackend({ root, packBlobsUnder: 0 }) });
  try {
    await mkdir(workspace);
    for (const name of FILES) await writeFile(join(workspace, name), `one ${name}\n`);
    const { id } = await store.create({ workspace, title: "bombed" });
    await store.append(id, { type: "message", payload: { role: "user", content: "edit them" } });
    const checkpoints = new CheckpointStore(store);
    const hashes: string[] = [];
    for (const [at, name] of FILES.entries()) {
      const event = await checkpoints.capture(id, { tool: "edit", paths: [name] });
      const file = (event!.payload as { files: { kind: string; blob: string }[] }).files[0]!;
      hashes.push(file.blob);
      await writeFile(join(workspace, name), `two ${at}\n`);
    }
    return { root, id, workspace, hashes };
  } finally {
    await store.close();
  }
}

interface Peak {
  code: number;
  stdout: string;
  stderr: string;
  peakRssMB: number;
}

async function cliPeak(args: string[]): Promise<Peak> {
  const run = await runChild("cli-peak.ts", args);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split("\n").at(-1)!) as Peak;
}

describe("a blob file claiming 1 GiB", () => {
  it("keeps verify, show --diff, a dry run and a rewind under PEAK_MB, and each names the damaged blobs", async () => {
    const s = await bombedSession();
    for (const hash of s.hashes) await writeFile(join(s.root, s.id, "blobs", hash.slice(0, 2), hash), bomb);
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);

    const verify = await cliPeak(["verify", s.id, "--root", s.root]);
    const show = await cliPeak(["show", s.id, "--diff", "--root", s.root]);
    const dry = await cliPeak(["rewind", s.id, "--to", "2", "--dry-run", "--root", s.root]);
    const rewind = await cliPeak(["rewind", s.id, "--to", "2", "--yes", "--root", s.root]);
    const peaks = { verify, show, dry, rewind };
    console.log(
      Object.entries(peaks)
        .map(([name, p]) => `${name} ${p.peakRssMB.toFixed(0)} MB`)
        .join(", "),
    );
    for (const [name, p] of Object.entries(peaks)) expect(p.peakRssMB, `${name}: ${p.stderr}`).toBeLessThan(PEAK_MB);

    expect(verify.code).not.toBe(0);
    expect(verify.stdout).toMatch(/damaged/);
    expect(show.code).toBe(0);
    expect(dry.code).toBe(0);
    expect(show.stdout).toMatch(/unknown +d\.txt +\(BLOB_CORRUPT\)/);
    // The damaged snapshots are skipped by name, as any damaged blob is; the rest of the rewind goes ahead.
    for (const run of [dry, rewind])
      for (const name of FILES.slice(1))
        expect(run.stdout).toMatch(new RegExp(`skip +${name.replace(".", "\\.")} +\\(blob_corrupt\\)`));
    expect(rewind.code).toBe(0);
    // No damaged blob was written into the workspace.
    for (const [at, name] of FILES.entries())
      expect(await readFile(join(s.workspace, name), "utf8")).toBe(`two ${at}\n`);
  }, 300_000);
});
