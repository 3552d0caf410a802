import type { FileSnapshot } from "../core/events.js";

/**
 * What a path was at the target, as far as the tape knows: its closest snapshot, or (`not_kept`) that a "files"
 * rewind made with keepUndo 0 changed it and kept no copy of what it was before, which is its state at a target
 * between that rewind's own target and its marker. A plan reports such a path skipped, "undo_not_kept".
 */
export type WantedState = FileSnapshot | { path: string; kind: "not_kept"; rewind: number };
