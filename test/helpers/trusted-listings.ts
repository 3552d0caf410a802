import type { FolderListing } from "../../src/checkpoint/workspace-index/index-entry.js";

/**
 * The folder listings of a walk as a walk would hold them had they been taken long after the folders last
 * changed: a listing taken within the racy window of its folder's times is never trusted (stat-entries.ts), and a
 * test that made its folders a moment ago would otherwise wait that window out.
 */
export function trustListings(folders: ReadonlyMap<string, FolderListing>): Map<string, FolderListing> {
  const later = 10_000_000_000n;
  return new Map([...folders].map(([path, listing]) => [path, { ...listing, listedAtNs: listing.listedAtNs + later }]));
}
