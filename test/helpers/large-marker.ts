// A rewind marker over many paths, as a large rewind writes it: one restore per path, each with its undo snapshot
// and what it wrote. For the tests of work on markers done in time slices, whose size is what they prove.

/** A well-formed rewind marker payload (RewindPayload) over `count` files. */
export function largeMarker(count: number) {
  const files = Array.from({ length: count }, (_, i) => ({
    path: `src/folder ${i % 37}/file-${i}.ts`,
    kind: "blob",
    blob: i.toString(16).padStart(64, "0"),
    bytes: i * 7,
    mode: 0o644,
  }));
  return {
    targetSequence: 4,
    mode: "all",
    filesRestored: count,
    filesDeleted: 0,
    skipped: ["a", "b"],
    changes: files.map((f) => ({
      path: f.path,
      action: "restore",
      diff: { unit: "lines", insertions: 1, deletions: 2 },
    })),
    eventsRemoved: count + 1,
    blobsPruned: 0,
    undo: { workspace: "/w", files },
    wrote: {
      workspace: "/w",
      files: files.map((f) => ({ path: f.path, kind: "file", sha256: f.blob, mode: f.mode })),
    },
  };
}
