import { lstat } from "../core/named-fs.js";
import { diffBudget, diffFile, type DiffLimits } from "../core/file-diff.js";
import type { FileSnapshot } from "../core/events.js";
import type { FilePlan } from "./plan.js";
import { definedFields } from "../core/defined-fields.js";
import { yieldIfLong } from "../core/time-slices.js";

/**
 * Adds to each restore or delete of a regular file what it does to the file as it is now: lines in and
 * out, or bytes past the diff bounds (docs/ARCHITECTURE.md, "Diffs"), and with `patches` the unified
 * diff. Both sides are already in the plan: the target's verified blob and the current bytes kept for
 * undo. A current file too large to have been read is measured with lstat, never read.
 */
export async function diffPlannedChanges(
  plan: FilePlan,
  realWorkspace: string,
  options: { patches?: boolean; limits?: DiffLimits } = {},
): Promise<void> {
  const now = new Map(plan.current.files.map((f) => [f.path, f]));
  const budget = diffBudget(options.limits);
  for (const change of plan.changes) {
    if (change.action === "skip" || !change.becomes) continue;
    await yieldIfLong(); // a diff is CPU work: many in a row would stall the event loop
    const before = now.get(change.path);
    const after = change.becomes;
    if (before?.kind === "skipped" && before.reason !== "too_large") continue; // unknown now: nothing to count
    const beforeIsFile = before?.kind === "blob" || (before?.kind === "skipped" && before.reason === "too_large");
    if (!beforeIsFile && after.kind !== "blob") continue; // a folder or a link on both sides: no text to count
    const sizes: { before?: number } = {};
    if (before?.kind === "skipped") sizes.before = await sizeOf(`${realWorkspace}/${change.path}`);
    const result = diffFile(change.path, bytesOf(before, plan.current.blobs), bytesOf(after, plan.blobs), {
      sizes,
      budget,
      ...definedFields({ patch: options.patches, limits: options.limits }),
    });
    change.diff = result.diff;
    if (result.patch !== undefined) change.patch = result.patch;
  }
}

function bytesOf(file: FileSnapshot | undefined, blobs: Map<string, Buffer>): Buffer | undefined {
  return file?.kind === "blob" ? blobs.get(file.blob) : undefined;
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await lstat(path)).size;
  } catch {
    return 0; // gone since the plan looked: the apply step will find out
  }
}
