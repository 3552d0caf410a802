// Work that runs long without giving the event loop a turn stalls everything else the agent's process does
// (its timers, its sockets, a lock lease's renewal): a rewind of many files did, one synchronous blob write or
// diff after another in a chain of already-settled promises (docs/ARCHITECTURE.md, "Batched file work"; bench
// "rewind 1000 files @10k: the main thread's longest stall"). Such loops call `yieldIfLong` between items.

/** The longest a loop runs on the main thread before it lets the event loop turn. */
export const SLICE_MS = 5;

let sliceStarted = performance.now();

/** Starts a new slice: the event loop just turned (or the caller knows it did). */
export function newSlice(): void {
  sliceStarted = performance.now();
}

/** True when the current slice has run past SLICE_MS. */
export function sliceIsLong(): boolean {
  return performance.now() - sliceStarted >= SLICE_MS;
}

let nextTurn: Promise<void> | undefined;

/**
 * Lets the event loop turn (setImmediate: after pending I/O and timers) once the current slice ran SLICE_MS.
 * Every caller waits for the same turn and looks again after it, so loops running side by side (the workers of
 * one `forEachLimited`) share one slice a turn: each starting a slice of its own held the loop for as many
 * slices as there were loops (test/core/time-slices.test.ts).
 */
export async function yieldIfLong(): Promise<void> {
  while (sliceIsLong()) await yieldNow();
}

/**
 * Lets the event loop turn now, whatever the slice: for a loop whose every step hands its caller work of its own
 * (a chunk of the log's lines, each parsed and checked by the reader), which the slice does not see.
 */
export async function yieldNow(): Promise<void> {
  nextTurn ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      nextTurn = undefined;
      newSlice();
      resolve();
    }),
  );
  await nextTurn;
}
