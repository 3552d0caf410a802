// The workspace the property tests play in: a fixed little tree where no file path is ever a
// folder path, so every generated history is possible on disk.
export const FILES = ["a.txt", "b.txt", "d/c.txt", "d/e/f.txt", "g/h.txt"] as const;
export const FOLDERS = ["d", "d/e", "g"] as const;
// Few contents, so the same bytes often sit under several paths and come back over time (shared blobs).
export const CONTENTS = ["", "x", "hello world\n", "a".repeat(5000), "\u00e9t\u00e9 \u{1F600}"] as const;
export const MODES = [0o644, 0o600, 0o755] as const;
