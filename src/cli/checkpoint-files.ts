import type { CheckpointChanges, CheckpointFileChange } from "../index.js";
import { printLine, type CliContext } from "./command.js";
import { diffFigure, printPatch } from "./diff-output.js";
import { table, type Style } from "./output.js";

function colourFor(style: Style, change: CheckpointFileChange["change"]): (text: string) => string {
  if (change === "created") return style.green;
  if (change === "deleted") return style.red;
  if (change === "modified") return style.yellow;
  return style.dim;
}

/**
 * Below a checkpoint's line in `show`: each path it covers, what its tool did to it and by how much,
 * so a user can pick the point to rewind to. With `patches`, each text change's unified diff follows.
 */
export function printCheckpointFiles(ctx: CliContext, entry: CheckpointChanges, indent: number, patches: boolean) {
  const pad = " ".repeat(indent);
  const rows = entry.files.map((file) => {
    const colour = colourFor(ctx.style, file.change);
    const row = [colour(file.change), file.path, diffFigure(ctx.style, file.diff)];
    if (file.reason) row.push(ctx.style.dim(`(${file.reason})`));
    return row;
  });
  for (const line of table(rows)) printLine(ctx.stdout, `${pad}${line}`.trimEnd());
  if (!patches) return;
  for (const file of entry.files) if (file.patch !== undefined) printPatch(ctx, file.patch);
}
