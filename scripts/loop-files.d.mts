/** The test files whose loops take their counts from rounds(), from the repository root. */
export function loopFiles(): string[];
