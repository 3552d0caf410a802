// Maintenance, verify: an undo marker's record of the events it put back, held to itself and to the tape.
import type { RewindPayload, StoredEvent } from "../core/events.js";
import { SequenceRuns, countOf, reappendedRuns, type SequenceRun } from "../core/reappended.js";

/**
 * Why an undo marker's former sequences (`reappendedRanges`, or `reappendedFrom` from older versions) do
 * not fit the rest of its payload, else undefined: each came from the cut of the rewind it undid, after that
 * rewind's target and below its marker, and the two forms, when both are there, say the same. These numbers
 * are all from the tape as it was when the marker was written, so this holds wherever the marker is now (put
 * back by a later undo, or in an archive). Asked only of a payload that fits its schema.
 */
export function undoMarkerProblem(event: StoredEvent): string | undefined {
  const payload = undoPayload(event);
  if (!payload) return undefined;
  const listed = payload.reappendedFrom;
  if (listed !== undefined) {
    const runs = new SequenceRuns();
    for (const sequence of listed) {
      if (sequence <= runs.last) return `its reappendedFrom lists #${sequence} after #${runs.last}`;
      runs.add(sequence);
    }
    if (payload.reappendedRanges !== undefined && !sameRuns(runs.runs, payload.reappendedRanges))
      return (
        `its reappendedFrom (${describeRuns(runs.runs)}) and reappendedRanges ` +
        `(${describeRuns(payload.reappendedRanges)}) differ`
      );
  }
  const runs = reappendedRuns(payload);
  const first = runs[0]?.[0];
  const last = runs.at(-1)?.[1];
  if (first !== undefined && first <= payload.targetSequence)
    return (
      `it names #${first}, at or below the target #${payload.targetSequence} ` +
      `of the rewind #${payload.undoOf} it undid`
    );
  if (last !== undefined && last >= payload.undoOf!)
    return `it names #${last}, not below the rewind #${payload.undoOf} it undid`;
  return undefined;
}

/**
 * The undo markers of the live log, collected as it is read (one entry per undo, not per event), then held
 * to where they are: an undo appends the events it puts back right after the marker it undoes and itself
 * right after them, so an undo marker still where it was written counts exactly `sequence - undoOf - 1`.
 * One a later undo put back has a new number and names the old ones; it lies between that undo's `undoOf`
 * and its marker, and is not held to its count. (Undos of disjoint stretches: a later undo's stretch never
 * straddles an earlier marker left in place, because a rewind cuts a suffix.)
 */
export class UndoMarkersInLog {
  private readonly markers: { sequence: number; undoOf: number; runs?: SequenceRun[] }[] = [];

  /**
   * Notes `event` if it is an undo marker. `sound`: its payload fits its schema and `undoMarkerProblem`, so
   * its count is worth holding to the tape; one that is not still tells which markers it put back.
   */
  add(event: StoredEvent, sound: boolean): void {
    const payload = undoPayload(event);
    if (!payload || !Number.isSafeInteger(payload.undoOf)) return;
    const runs = sound ? reappendedRuns(payload) : undefined;
    this.markers.push({ sequence: event.sequence, undoOf: payload.undoOf!, ...(runs ? { runs } : {}) });
  }

  /** Each marker still in place whose runs do not count the events between the rewind it undid and itself. */
  problems(): { sequence: number; reason: string }[] {
    const out: { sequence: number; reason: string }[] = [];
    let putBackAbove = Number.POSITIVE_INFINITY; // markers above this were put back by a later undo
    for (let i = this.markers.length - 1; i >= 0; i--) {
      const { sequence, undoOf, runs } = this.markers[i]!;
      if (sequence > putBackAbove) continue;
      putBackAbove = undoOf;
      if (!runs) continue;
      const count = countOf(runs);
      const between = sequence - undoOf - 1;
      if (count !== between)
        out.push({
          sequence,
          reason:
            `it records ${count} former sequences (${describeRuns(runs)}) where ${between} events lie between ` +
            `the rewind #${undoOf} it undid and itself`,
        });
    }
    return out.reverse();
  }
}

function undoPayload(event: StoredEvent): RewindPayload | undefined {
  if (event.type !== "session_rewind") return undefined;
  const payload = event.payload as RewindPayload | null;
  return typeof payload === "object" && payload !== null && payload.undoOf !== undefined ? payload : undefined;
}

function sameRuns(a: readonly SequenceRun[], b: readonly SequenceRun[]): boolean {
  return a.length === b.length && a.every(([first, last], i) => first === b[i]![0] && last === b[i]![1]);
}

/** "#4-#5, #11-#13", the first few runs of a long list. */
function describeRuns(runs: readonly SequenceRun[]): string {
  if (runs.length === 0) return "none";
  const shown = runs.slice(0, 5).map(([first, last]) => (first === last ? `#${first}` : `#${first}-#${last}`));
  return runs.length > 5 ? `${shown.join(", ")} and ${runs.length - 5} more runs` : shown.join(", ");
}
