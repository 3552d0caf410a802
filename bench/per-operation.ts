import { median, throughput, type Figure } from "./harness.js";

// Captures and rewinds take milliseconds, which the harness's "s" unit would print as 0.00 s; so
// they are reported as operations per second (one per round), and ratios read as speed-ups.

/** One operation per round: its rate in operations/s, median over the rounds. */
export function perOperation(label: string, msPerRound: readonly number[]): Figure {
  return throughput(label, 1, msPerRound);
}

/** Median milliseconds of a {@link perOperation} figure. */
export function medianMs(figure: Figure): number {
  return median((figure.samples ?? [figure.value]).map((perSecond) => 1000 / perSecond));
}

/** "1.23 ms", or "456 ms" once the decimals stop mattering. */
export function formatMs(figure: Figure): string {
  const value = medianMs(figure);
  return value >= 10 ? `${value.toFixed(0)} ms` : `${value.toFixed(2)} ms`;
}
