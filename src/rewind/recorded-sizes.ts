import type { FileSnapshot } from "../core/events.js";

/**
 * The length each blob's snapshot recorded, by hash: what a reader caps the blob at, so a planted blob that
 * claims more (a compression bomb) costs no more than the file was (docs/ARCHITECTURE.md, "Blobs").
 */
export function recordedSizes(records: readonly FileSnapshot[]): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const record of records) if (record.kind === "blob") sizes.set(record.blob, record.bytes);
  return sizes;
}
