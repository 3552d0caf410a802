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

/** Lets the event loop turn (setImmediate: after pending I/O and timers) once the current slice ran SLICE_MS. */
export async function yieldIfLong(): Promise<void> {
  if (!sliceIsLong()) return;
  await new Promise<void>((resolve) => setImmediate(resolve));
  newSlice();
}
