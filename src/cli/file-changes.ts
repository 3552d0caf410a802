import type { DiffTotals, FileChange } from "../index.js";
import { printLine, type CliContext } from "./command.js";
import { diffFigure, totalsFigure } from "./diff-output.js";
import { plural, table, type Style } from "./output.js";

function colourFor(style: Style, action: FileChange["action"]): (text: string) => string {
  if (action === "restore") return style.green;
  if (action === "delete") return style.red;
  return style.yellow;
}

/**
 * The per-path plan or outcome of a rewind or undo, each path coloured by what happens to it, with
 * what it does to the file now: "+N −M" lines, or bytes.
 */
export function printFileChanges(ctx: CliContext, changes: readonly FileChange[]): void {
  const rows = changes.map((change) => {
    const colour = colourFor(ctx.style, change.action);
    const row = [colour(change.action), colour(change.path), diffFigure(ctx.style, change.diff)];
    if (change.reason) row.push(ctx.style.dim(`(${change.reason})`));
    return row;
  });
  for (const line of table(rows)) printLine(ctx.stdout, `  ${line}`.trimEnd());
}

/** "2 files restored, 1 deleted, 1 skipped (+4 −2 lines)". */
export function fileCounts(
  report: { filesRestored: number; filesDeleted: number; skipped: readonly string[]; diffTotals?: DiffTotals },
  style?: Style,
): string {
  const parts = [`${plural(report.filesRestored, "file")} restored`, `${report.filesDeleted} deleted`];
  if (report.skipped.length > 0) parts.push(`${report.skipped.length} skipped`);
  const totals = report.diffTotals && style ? totalsFigure(style, report.diffTotals) : "";
  return parts.join(", ") + (totals ? ` (${totals})` : "");
}
