// How many rounds a crash or race loop runs, and how many inputs a property test tries. Two tiers of the same
// tests (docs/testing.md, "Rounds"): `npm test` runs a few rounds of each loop, enough to fail on
// the bug it was written for (each loop's comment says which failure it was checked against); `npm run
// test:soak` (AGENT_TAPE_SOAK=1), which CI runs once, runs many, for the rare interleavings. AGENT_TAPE_ROUNDS=n
// sets every loop to n rounds, to hammer one file: `AGENT_TAPE_ROUNDS=200 npx vitest run <file>`.

const fixed = process.env.AGENT_TAPE_ROUNDS;
const soak = process.env.AGENT_TAPE_SOAK === "1";

/** `few` rounds in `npm test`, `many` in the soak run, or AGENT_TAPE_ROUNDS when it is set. */
export function rounds(few: number, many: number): number {
  if (fixed !== undefined && fixed !== "") {
    const n = Number(fixed);
    if (!Number.isSafeInteger(n) || n < 1)
      throw new Error(`AGENT_TAPE_ROUNDS must be a whole number ≥ 1, not "${fixed}"`);
    return n;
  }
  return soak ? many : few;
}

/** Whether this is the soak run (`npm run test:soak`). */
export const soaking = soak;
