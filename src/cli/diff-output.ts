import type { DiffTotals, FileDiff } from "../index.js";
import { printLine, type CliContext } from "./command.js";
import { formatBytes, type Style } from "./output.js";

// U+2212, the minus sign: "+3 −1" reads as a count of lines, not a range or an option.
const MINUS = "\u2212";

/** "+3 −1" for lines; "+1.2 KiB −4 B binary" for a file counted in bytes; "" without a diff. */
export function diffFigure(style: Style, diff: FileDiff | undefined): string {
  if (!diff) return "";
  if (diff.unit === "lines") return plusMinus(style, `${diff.insertions}`, `${diff.deletions}`);
  const figure = plusMinus(style, formatBytes(diff.insertions), formatBytes(diff.deletions));
  return diff.reason ? `${figure} ${style.dim(reasonWords(diff.reason))}` : figure;
}

/** "too_large" -> "too large": a reason as the CLI prints it, beside the figures and in --diff alike. */
function reasonWords(reason: string): string {
  return reason.replaceAll("_", " ");
}

function plusMinus(style: Style, insertions: string, deletions: string): string {
  return `${style.green(`+${insertions}`)} ${style.red(`${MINUS}${deletions}`)}`;
}

/** "+4 −2 lines, +10 B −20 B", leaving out the half that is zero; "" when nothing changes. */
export function totalsFigure(style: Style, totals: DiffTotals): string {
  const parts: string[] = [];
  const { lines, bytes } = totals;
  if (lines.insertions + lines.deletions > 0)
    parts.push(`${plusMinus(style, `${lines.insertions}`, `${lines.deletions}`)} lines`);
  if (bytes.insertions + bytes.deletions > 0)
    parts.push(plusMinus(style, formatBytes(bytes.insertions), formatBytes(bytes.deletions)));
  return parts.join(", ");
}

/** A unified diff, coloured like git's on a terminal (headers bold, hunks cyan-ish dim, +/- green/red). */
export function printPatch(ctx: CliContext, patch: string): void {
  const { style } = ctx;
  const lines = patch.endsWith("\n") ? patch.slice(0, -1).split("\n") : patch.split("\n");
  for (const line of lines) {
    if (line.startsWith("--- ") || line.startsWith("+++ ")) printLine(ctx.stdout, style.bold(line));
    else if (line.startsWith("@@")) printLine(ctx.stdout, style.dim(line));
    else if (line.startsWith("+")) printLine(ctx.stdout, style.green(line));
    else if (line.startsWith("-")) printLine(ctx.stdout, style.red(line));
    else printLine(ctx.stdout, line);
  }
}

/** Each change's unified diff; a change counted in bytes says why it has none. */
export function printPatches(
  ctx: CliContext,
  changes: readonly { path: string; diff?: FileDiff | undefined; patch?: string | undefined }[],
): void {
  for (const change of changes) {
    if (change.patch !== undefined) printPatch(ctx, change.patch);
    else if (change.diff?.unit === "bytes")
      printLine(
        ctx.stdout,
        ctx.style.dim(`(${change.path}: no line diff, ${reasonWords(change.diff.reason ?? "bytes")})`),
      );
  }
}
