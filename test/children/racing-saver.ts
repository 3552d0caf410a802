// Child process for the edit-saved-during-a-rewind test: for each line "save N" on stdin, waits a random
// fraction of a millisecond, then saves `file` in place (open with O_TRUNC, write: as most editors and tools
// do), then makes `<flags>/saved-N` so the parent knows the save is on disk. Ends when stdin ends.
// argv: file flags
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

const [file, flags] = process.argv.slice(2);
if (!file || !flags) throw new Error("usage: racing-saver file flags");

for await (const line of createInterface({ input: process.stdin })) {
  const round = line.replace(/^save /, "");
  const until = performance.now() + Math.random();
  while (performance.now() < until); // a random delay shorter than a timer can give
  writeFileSync(file, `save ${round}\n`);
  writeFileSync(join(flags, `saved-${round}`), "");
}
