// Which events an undo put back: their former sequences, read from either form an undo marker has had
// (docs/ARCHITECTURE.md, "Rewind intent", the undo marker).
import type { RewindPayload } from "./events.js";

/** A stretch of consecutive sequences, `[first, last]`, both included. */
export type SequenceRun = [first: number, last: number];

/**
 * The former sequences of the events an undo marker put back, as runs in order: its `reappendedRanges`, or,
 * on a marker written before them, its `reappendedFrom` (one number per event) gathered into runs, exactly
 * (a number that does not continue a run starts the next, in the order listed). Empty for a rewind marker or
 * an undo that put back no events. Reads a payload from disk defensively: a field that is not a list counts
 * as absent (`verify` reports it).
 */
export function reappendedRuns(payload: RewindPayload): SequenceRun[] {
  const { reappendedRanges, reappendedFrom } = payload as { reappendedRanges?: unknown; reappendedFrom?: unknown };
  if (Array.isArray(reappendedRanges)) return reappendedRanges.map(([first, last]: SequenceRun) => [first, last]);
  if (!Array.isArray(reappendedFrom)) return [];
  const runs = new SequenceRuns();
  for (const sequence of reappendedFrom) runs.add(sequence as number);
  return runs.runs;
}

/** How many events an undo marker put back (0 on a rewind marker), whichever form it records them in. */
export function reappendedCount(payload: RewindPayload): number {
  const { reappendedRanges, reappendedFrom } = payload as { reappendedRanges?: unknown; reappendedFrom?: unknown };
  if (Array.isArray(reappendedRanges)) return countOf(reappendedRanges as SequenceRun[]);
  return Array.isArray(reappendedFrom) ? reappendedFrom.length : 0;
}

/**
 * The former sequences one by one, in order, without a list of them: what `reappendedFrom` held, from
 * either form (`[...reappendedSequences(p)]` is that list).
 */
export function* reappendedSequences(payload: RewindPayload): Generator<number> {
  const { reappendedRanges, reappendedFrom } = payload as { reappendedRanges?: unknown; reappendedFrom?: unknown };
  if (!Array.isArray(reappendedRanges) && Array.isArray(reappendedFrom)) {
    yield* reappendedFrom as number[];
    return;
  }
  for (const [first, last] of reappendedRuns(payload)) for (let n = first; n <= last; n++) yield n;
}

export function countOf(runs: readonly SequenceRun[]): number {
  let count = 0;
  for (const [first, last] of runs) count += last - first + 1;
  return count;
}

/**
 * Gathers sequences into runs as they come: its memory follows the gaps, not the count. A cut is one run
 * unless it held a rewind marker that was not undone (the marker took a number past the events it cut, so
 * the numbers jump there), one more run for each such marker.
 */
export class SequenceRuns {
  readonly runs: SequenceRun[] = [];
  count = 0;
  /** The last sequence added (0 before any). */
  last = 0;

  add(sequence: number): void {
    const run = this.runs.at(-1);
    if (run && sequence === run[1] + 1) run[1] = sequence;
    else this.runs.push([sequence, sequence]);
    this.count++;
    this.last = sequence;
  }
}
