// What a session folder takes on disk, counted file by file (sizeOf, usage).
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { mapLimited } from "../../core/bounded-concurrency.js";

/** Bytes and count of the regular files under `dir` (0 when it does not exist), a few stats at a time. */
export async function folderUsage(dir: string): Promise<{ bytes: number; files: number }> {
  const usage = { bytes: 0, files: 0 };
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return usage;
  }
  const sizes = await mapLimited(entries, 16, async (entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return folderUsage(path);
    if (!entry.isFile()) return { bytes: 0, files: 0 };
    try {
      return { bytes: (await stat(path)).size, files: 1 };
    } catch {
      return { bytes: 0, files: 0 }; // removed while we looked (a prune, a rename into place)
    }
  });
  for (const size of sizes) {
    usage.bytes += size.bytes;
    usage.files += size.files;
  }
  return usage;
}
