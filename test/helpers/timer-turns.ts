// For the tests of work done in time slices (src/core/time-slices.ts): whether a timer got to run while it went on.

/** Runs `work` beside a 1 ms interval timer: its result, how long it took, and how often the timer ran meanwhile. */
export async function withTimerTurns<T>(work: () => Promise<T>): Promise<{ result: T; tookMs: number; turns: number }> {
  let turns = 0;
  const ticker = setInterval(() => turns++, 1);
  const started = performance.now();
  try {
    const result = await work();
    return { result, tookMs: performance.now() - started, turns };
  } finally {
    clearInterval(ticker);
  }
}
