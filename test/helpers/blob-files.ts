import { existsSync } from "node:fs";
import { appendFile, chmod, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DELETION, encodeEntry, scanSegment } from "../../src/backend/fs/pack-format.js";
import { byHand } from "./store-backends.js";

// A blob damaged or lost by hand, wherever the fs backend keeps it: its own file (blobs/ab/abcd…) or an entry
// of the session's pack (blobs/pack/*.pack; docs/format.md, "Blob packs"); or its row, when the suites run on
// another backend (test/helpers/store-backends.ts).

const segmentsOf = async (root: string, id: string) =>
  (await readdir(join(root, id, "blobs", "pack")).catch(() => [] as string[]))
    .filter((name) => name.endsWith(".pack"))
    .sort()
    .map((name) => join(root, id, "blobs", "pack", name));

function looseFile(root: string, id: string, hash: string): string {
  return join(root, id, "blobs", hash.slice(0, 2), hash);
}

/** Where the newest live entry of `hash` is in the pack, if any. */
async function packedAt(root: string, id: string, hash: string) {
  let found: { segment: string; offset: number; length: number } | undefined;
  for (const segment of await segmentsOf(root, id))
    for (const entry of scanSegment(await readFile(segment), 0).entries)
      if (entry.hash === hash) found = entry.kind === DELETION ? undefined : { segment, ...entry };
  return found;
}

/** Whether the blob is stored at all (its own file, or live in the pack). */
export async function blobIsStored(root: string, id: string, hash: string): Promise<boolean> {
  const other = byHand();
  if (other) return other.blobIsStored(root, id, hash);
  return existsSync(looseFile(root, id, hash)) || (await packedAt(root, id, hash)) !== undefined;
}

/** Replaces the blob's stored bytes by others (its own file), or flips its first stored byte (in the pack). */
export async function damageBlob(root: string, id: string, hash: string, bytes = "not what it was\n"): Promise<void> {
  const other = byHand();
  if (other) return other.damageBlob(root, id, hash, bytes);
  const file = looseFile(root, id, hash);
  if (existsSync(file)) {
    await chmod(file, 0o644);
    await writeFile(file, bytes);
    return;
  }
  const at = await packedAt(root, id, hash);
  if (!at) throw new Error(`blob ${hash} is not stored`);
  const segment = await readFile(at.segment);
  segment[at.offset + 52]! ^= 0xff;
  await writeFile(at.segment, segment);
}

/**
 * Loses the blob: its file removed, or, in the pack, a deletion entry appended as a deleter would and its bytes
 * damaged (a process that read the pack before still knows where the entry was, and would find it whole).
 */
export async function removeBlob(root: string, id: string, hash: string): Promise<void> {
  const other = byHand();
  if (other) return other.removeBlob(root, id, hash);
  const file = looseFile(root, id, hash);
  if (existsSync(file)) return rm(file);
  await damageBlob(root, id, hash);
  const segments = await segmentsOf(root, id);
  await appendFile(segments.at(-1)!, encodeEntry(DELETION, hash));
}
