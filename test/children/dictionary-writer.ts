// Child process for the pack dictionary crash test (src/backend/fs/pack-dictionary.ts): a new session each round,
// then a scan's batch of 120 small source-like blobs (the first batch draws the pack's dictionary and writes it
// before any entry that names it), forever, until SIGKILLed. Prints "session <id>" before a round's writes and
// "wrote <id> <hash>" for each blob once the batch resolved.
// argv: root
import { createHash, randomInt } from "node:crypto";
import { fsBackend } from "../../src/backend/index.js";

const [root] = process.argv.slice(2);
if (!root) throw new Error("usage: dictionary-writer root");

const backend = fsBackend({ root, lockStaleMs: 1000 });
const source = (seed: number) => {
  let text = `// module ${seed}\nimport { helper } from "./helpers.js";\n\n`;
  for (let fn = 0; text.length < 300 + (seed % 1500); fn++)
    text += `export function step${seed}_${fn}(input: number[]): number {\n  return input.length * ${fn};\n}\n\n`;
  return Buffer.from(text);
};
for (let round = 0; ; round++) {
  const id = `s${round}`;
  await backend.createSession({ id, createdAt: "2025-01-01T00:00:00.000Z" });
  process.stdout.write(`session ${id}\n`);
  const locked = await backend.lock(id);
  const blobs = Array.from({ length: 120 }, () => source(randomInt(0, 1_000_000)));
  const hashes = blobs.map((bytes) => createHash("sha256").update(bytes).digest("hex"));
  await locked.writeScanBlobs!(hashes.map((hash, i) => [hash, blobs[i]!] as const));
  for (const hash of hashes) process.stdout.write(`wrote ${id} ${hash}\n`);
  await locked.release();
}
