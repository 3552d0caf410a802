import type { OnConflict, RewindConflict } from "../index.js";
import { printLine } from "./command.js";
import { table, type TextSink } from "./output.js";

export const ON_CONFLICT: readonly OnConflict[] = ["refuse", "skip", "overwrite"];

const SINCE = "Changed outside this session since it last wrote them";

/** What the rewind did (or would do) about the conflicts, as the heading above them says it. */
const RESOLVED: Record<RewindConflict["resolution"], string> = {
  refuse: "a rewind refuses without --on-conflict",
  skip: "left as they are",
  overwrite: "overwritten; undo brings them back",
};

/**
 * Each path changed outside the session since the tape last wrote it, with what changed ("modified",
 * "deleted", …): docs/ARCHITECTURE.md, "Conflicts".
 */
export function printConflicts(sink: TextSink, conflicts: readonly RewindConflict[], asking = false): void {
  if (conflicts.length === 0) return;
  // Before a question, what a rewind would do about them is what the question is about.
  printLine(sink, asking ? `${SINCE}:` : `${SINCE} (${RESOLVED[conflicts[0]!.resolution]}):`);
  const rows = conflicts.map((c) => [c.path, c.change]);
  for (const line of table(rows)) printLine(sink, `  ${line}`.trimEnd());
}

/** The question before overwriting them; only "y" or "yes" is a yes. */
export async function confirmOverwrite(
  ask: (question: string) => Promise<string>,
  count: number,
  someLost = false,
): Promise<boolean> {
  const them = count === 1 ? "it" : `these ${count} paths`;
  const kept = someLost ? "except what is listed as lost for good" : "";
  const answer = await ask(`Overwrite ${them}? The current bytes go into the undo${kept && `, ${kept}`}. [y/N] `);
  return /^\s*y(es)?\s*$/i.test(answer);
}
