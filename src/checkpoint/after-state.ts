import type { FileSnapshot, FileState } from "../core/events.js";
import { snapshotPaths, type SnapshotLimits } from "./snapshot.js";

/**
 * What `paths` are now, as content hashes: the after-state a tool call leaves, which a later rewind
 * compares the workspace with (docs/ARCHITECTURE.md, "Conflicts"). Each file is read and hashed
 * once; nothing is stored and nothing fsynced, so it costs a tool call one hash per file it touched.
 */
export async function readFileStates(
  realWorkspace: string,
  givenWorkspace: string,
  paths: readonly string[],
  limits: SnapshotLimits,
): Promise<FileState[]> {
  const snapshot = await snapshotPaths(realWorkspace, givenWorkspace, paths, limits);
  return snapshot.files.map(fileStateOf);
}

/** A snapshot record as a state to compare: the blob's hash is the content's hash. */
export function fileStateOf(record: FileSnapshot): FileState {
  switch (record.kind) {
    case "blob":
      return { path: record.path, kind: "file", sha256: record.blob, mode: record.mode };
    case "skipped":
      return { path: record.path, kind: "unknown", reason: record.reason };
    default:
      return record;
  }
}
