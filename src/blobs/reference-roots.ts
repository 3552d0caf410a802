import type { StorageBackend } from "../backend/types.js";

/**
 * Something other than the log that keeps blobs alive: today the workspace index, whose entries
 * point at the bytes every tracked file had at the last scan. The layer that owns such a record
 * registers a root when its module loads (it sits above this one; docs/ARCHITECTURE.md,
 * "Layers"), and every prune and gc asks all roots before deleting anything.
 */
export type ReferenceRoot = (backend: StorageBackend, sessionId: string) => Promise<Iterable<string>>;

const roots = new Set<ReferenceRoot>();

export function registerReferenceRoot(root: ReferenceRoot): void {
  roots.add(root);
}

/** Adds every blob a registered root references to `into`. */
export async function addRootReferences(backend: StorageBackend, sessionId: string, into: Set<string>): Promise<void> {
  for (const root of roots) for (const hash of await root(backend, sessionId)) into.add(hash);
}

/**
 * Removes from `candidates` every blob a registered root references, stopping once none is left: a prune
 * looking at a few blobs need not gather the tens of thousands a root holds (docs/ARCHITECTURE.md, "Blobs").
 */
export async function dropRootReferences(
  backend: StorageBackend,
  sessionId: string,
  candidates: Set<string>,
): Promise<void> {
  for (const root of roots) {
    if (candidates.size === 0) return;
    for (const hash of await root(backend, sessionId)) if (candidates.delete(hash) && candidates.size === 0) return;
  }
}
