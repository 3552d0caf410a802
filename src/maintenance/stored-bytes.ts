import type { StorageBackend } from "../backend/types.js";

/**
 * What deleting a blob frees, for a dry run to report: its bytes as stored (compressed on the fs backend,
 * docs/ARCHITECTURE.md, "Blobs"), or its original bytes from a backend that cannot tell; 0 when absent.
 */
export async function storedBlobBytes(backend: StorageBackend, sessionId: string, hash: string): Promise<number> {
  if (backend.storedBlobBytes) return (await backend.storedBlobBytes(sessionId, hash)) ?? 0;
  return (await backend.readBlob(sessionId, hash))?.length ?? 0;
}
