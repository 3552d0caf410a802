// node --import tsx bench/race-window.ts [rounds]
// The window a rewind leaves open (docs/ARCHITECTURE.md, "Conflicts"): from the moment its last look at a
// path finds it as planned to the moment the write that replaces it (a rename) or deletes it (an unlink) is
// done. An edit saved inside it is lost; one saved before it is left as it is. Measured on the code the apply
// step runs: stillAsPlanned through a held folder descriptor, then the rename or the removal.
import { constants } from "node:fs";
import { mkdtemp, open, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { removeEntry } from "../src/checkpoint/remove-entry.js";
import { stillAsPlanned } from "../src/rewind/still-as-planned.js";

const rounds = Number(process.argv[2] ?? 2000);
const dir = await mkdtemp(join(tmpdir(), "agent-tape-race-window-"));
const folder = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
const held = `/proc/self/fd/${folder.fd}`;
const bytes = Buffer.from("a line of notes\n".repeat(64)); // 1 KiB
const record = {
  path: "notes.txt",
  kind: "blob" as const,
  blob: createHash("sha256").update(bytes).digest("hex"),
  bytes: bytes.length,
  mode: 0o644,
};
const planned = new Map([["notes.txt", [record]]]);

const ns = (from: bigint) => Number(process.hrtime.bigint() - from) / 1e3; // µs
const replace: number[] = [];
const remove: number[] = [];
for (let i = 0; i < rounds; i++) {
  await writeFile(join(dir, "notes.txt"), bytes, { mode: 0o644 });
  await writeFile(join(dir, "temp"), "new\n");
  if (!(await stillAsPlanned(`${held}/notes.txt`, "notes.txt", planned, true))) throw new Error("not as planned");
  let from = process.hrtime.bigint();
  await rename(`${held}/temp`, `${held}/notes.txt`);
  replace.push(ns(from));
  await writeFile(join(dir, "notes.txt"), bytes, { mode: 0o644 });
  if (!(await stillAsPlanned(`${held}/notes.txt`, "notes.txt", planned, true))) throw new Error("not as planned");
  from = process.hrtime.bigint();
  await removeEntry(`${held}/notes.txt`);
  remove.push(ns(from));
}
await folder.close();
await rm(dir, { recursive: true, force: true });

const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
for (const [name, times] of [
  ["replace (look, then rename)", replace],
  ["delete (look, then unlink)", remove],
] as const) {
  const sorted = [...times].sort((a, b) => a - b);
  console.log(
    `${name}: median ${at(sorted, 0.5).toFixed(0)} µs, p99 ${at(sorted, 0.99).toFixed(0)} µs, ` +
      `max ${sorted.at(-1)!.toFixed(0)} µs (${rounds} rounds)`,
  );
}
