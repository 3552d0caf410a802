import type { IndexEntry } from "./index-entry.js";

// A whole walk looks up the entry each path had before it. A later scan of 50k files spent a sixth of its time on
// those lookups (most of them cache misses in a large map); a walk of a tree that did not change meets the paths in
// the order the last walk set them, so it takes each from that order with a comparison (docs/ARCHITECTURE.md,
// "Workspace index", a later whole walk).

/** How far past the expected next path the walk looks for the one it meets (the paths between were removed). */
const LOOK_AHEAD = 4;

/** The previous entries of a whole walk, in the order the last walk set them; each path is asked for once. */
export class PreviousInOrder {
  private readonly paths: string[];
  private readonly entries: IndexEntry[];
  private next = 0;
  /** Which were met, in order and (found in the map) out of it. */
  private readonly metInOrder: Uint8Array;
  private readonly metOutOfOrder = new Set<string>();

  /** `map` must not change, for the paths not yet asked for, while the walk runs. */
  constructor(private readonly map: ReadonlyMap<string, IndexEntry>) {
    this.paths = new Array<string>(map.size);
    this.entries = new Array<IndexEntry>(map.size);
    this.metInOrder = new Uint8Array(map.size);
    let i = 0;
    for (const [path, entry] of map) {
      this.paths[i] = path;
      this.entries[i++] = entry;
    }
  }

  /** What `path` held before the walk. */
  get(path: string): IndexEntry | undefined {
    const { paths } = this;
    for (let i = this.next, end = Math.min(this.next + LOOK_AHEAD, paths.length); i < end; i++)
      if (paths[i] === path) {
        this.next = i + 1;
        this.metInOrder[i] = 1;
        return this.entries[i];
      }
    const entry = this.map.get(path);
    if (entry !== undefined) this.metOutOfOrder.add(path);
    return entry;
  }

  /** The previous paths never asked for. */
  *notMet(): Generator<string> {
    for (let i = 0; i < this.paths.length; i++) {
      const path = this.paths[i]!;
      if (this.metInOrder[i] !== 1 && !this.metOutOfOrder.has(path)) yield path;
    }
  }

  get size(): number {
    return this.paths.length;
  }
}
