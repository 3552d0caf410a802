import { median, throughput, type Figure } from "./harness.js";

// Captures and rewinds take milliseconds, which the harness's "s" unit would print as 0.00 s; so
// they are reported as rates (operations, or files, per second) and ratios read as speed-ups.

/** `operations` done per round (1 capture, k files rewound): the rate per second, median over the rounds. */
export function perOperation(label: string, msPerRound: readonly number[], operations = 1): Figure {
  return throughput(label, operations, msPerRound);
}

/** Median milliseconds per round of a {@link perOperation} figure made with the same `operations`. */
export function medianMs(figure: Figure, operations = 1): number {
  return median((figure.samples ?? [figure.value]).map((perSecond) => (operations * 1000) / perSecond));
}

/** "1.23 ms", or "456 ms" once the decimals stop mattering. */
export function formatMs(figure: Figure, operations = 1): string {
  const value = medianMs(figure, operations);
  return value >= 10 ? `${value.toFixed(0)} ms` : `${value.toFixed(2)} ms`;
}
