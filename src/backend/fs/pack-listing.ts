// What a session's pack folder holds (its segments and dictionaries), listed again only when the folder may have
// changed since this process last listed it (docs/ARCHITECTURE.md, "Blobs", the pack's listing). Every look at the
// pack starts here, and a capture or a rewind looks several times: a listing is an open, two reads and a close, a
// stat one call.
import { lstatSync, readdirSync } from "node:fs";
import { StoreTamperedError } from "../../core/errors.js";

export interface PackListing {
  /** The segments' numbers, in order. */
  seqs: number[];
  /** The dictionaries' sha256 names, sorted. */
  dictionaries: string[];
}

/**
 * A folder's last change this long before a listing makes the listing trustworthy for as long as the folder's
 * inode, mtime and ctime stay as they were: a name added or removed later sets them to the time of that change,
 * which cannot equal a time this far back. Within it, a change in the same tick of the file system's clock as the
 * one before could leave them as they were, so the folder is listed every time (git's "racily clean" entries).
 */
const SETTLED_NS = 2_000_000_000n;

const SEGMENT = /^(\d{8})\.pack$/;
const DICTIONARY = /^dictionary-([0-9a-f]{64})$/;
const NOTHING: PackListing = Object.freeze({ seqs: [], dictionaries: [] }) as PackListing;

const listings = new Map<string, { stamp: string; listing: PackListing }>();

/**
 * The pack folder `dir` as it is now: from this process's last listing when the folder is the one it listed and has
 * not changed since, else listed now. No folder: nothing. A link or anything but a folder there is STORE_TAMPERED.
 */
export function packListing(id: string, dir: string): PackListing {
  const info = lstatSync(dir, { bigint: true, throwIfNoEntry: false });
  if (info === undefined) {
    listings.delete(dir);
    return NOTHING;
  }
  if (info.isSymbolicLink()) throw new StoreTamperedError(id, `${dir} is a symlink, not a folder`);
  if (!info.isDirectory()) throw new StoreTamperedError(id, `${dir} is not a folder`);
  const stamp = `${info.dev}:${info.ino}:${info.mtimeNs}:${info.ctimeNs}`;
  const known = listings.get(dir);
  if (known?.stamp === stamp) return known.listing;
  const listing = listNames(dir);
  // Taken from the wall clock after the stat: a listing is kept only once the folder's last change has settled.
  const now = BigInt(Date.now()) * 1_000_000n;
  if (info.ctimeNs + SETTLED_NS < now && info.mtimeNs + SETTLED_NS < now) listings.set(dir, { stamp, listing });
  else listings.delete(dir);
  return listing;
}

/** Forgets the listing of `dir`, so that the next look lists it: a segment it named was not there. */
export function forgetPackListing(dir: string): void {
  listings.delete(dir);
}

function listNames(dir: string): PackListing {
  const seqs: number[] = [];
  const dictionaries: string[] = [];
  for (const name of readdirSync(dir)) {
    const segment = SEGMENT.exec(name);
    if (segment) seqs.push(Number(segment[1]));
    const dictionary = DICTIONARY.exec(name);
    if (dictionary) dictionaries.push(dictionary[1]!);
  }
  return { seqs: seqs.sort((a, b) => a - b), dictionaries: dictionaries.sort() };
}
