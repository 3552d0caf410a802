// Child process for test/core/sync-filesystem.process.test.ts: grows past the resident memory from which
// syncFilesystem starts `sync` from a worker thread, makes three syncs of `folder` at once and one after, prints
// their outcomes, then ends by itself: the idle worker must not keep it alive.
// argv: folder
import { syncFilesystem } from "../../src/core/sync-filesystem.js";

const [folder] = process.argv.slice(2);
if (!folder) throw new Error("usage: sync-filesystem-big folder");
const ballast: Buffer[] = [];
while (process.memoryUsage.rss() < 200 * 1024 * 1024) ballast.push(Buffer.alloc(8 * 1024 * 1024, 1));
const outcomes = await Promise.all([syncFilesystem(folder), syncFilesystem(folder), syncFilesystem(folder)]);
outcomes.push(await syncFilesystem(folder));
process.stdout.write(
  `${JSON.stringify({ outcomes, rssMB: Math.round(process.memoryUsage.rss() / 2 ** 20), ballast: ballast.length })}\n`,
);
