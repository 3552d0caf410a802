import { InvalidArgumentError } from "../core/errors.js";

/**
 * Refuses a touches map that names a tool the tool map does not have (a typo would otherwise leave the real tool
 * unchecked, silently). The message speaks in the caller's terms: `where` is the call the user wrote
 * (`tape.tools()`), `what` its argument (`the touches map`); it lists the tools there are and the closest name.
 */
export function assertTouchesNameTools(
  where: string,
  what: string,
  touches: object,
  toolNames: Iterable<string>,
): void {
  const known = [...toolNames].sort();
  for (const name of Object.keys(touches)) {
    if (known.includes(name)) continue;
    const closest = closestName(name, known);
    throw new InvalidArgumentError(
      `${where}: ${what} names "${name}", which is none of the tools it was given (${known.join(", ") || "none"}).` +
        (closest === undefined ? "" : ` Did you mean "${closest}"?`),
    );
  }
}

/** The known name within a third of the typed one's length in edits (at least 2), the fewest edits first. */
function closestName(typed: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(typed, name);
    if (distance <= Math.max(2, Math.floor(typed.length / 3)) && (best === undefined || distance < best.distance))
      best = { name, distance };
  }
  return best?.name;
}

/** Levenshtein distance: insertions, deletions and substitutions of one character each. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}
