// How many folders one operation keeps open (held-workspace.ts): a share of the process's descriptor limit.

/** Never fewer kept than this: the budget when the limit cannot be read, and well under the usual 1,024. */
export const MIN_KEPT_FOLDERS = 256;
/** Never more: past it a walk is long enough that a reopen costs little beside it. */
export const MAX_KEPT_FOLDERS = 4096;
/** One sixteenth of the limit: room for the caller's own descriptors and for other operations running at once. */
const SHARE = 16;

/**
 * The folders one operation may keep open, from the text of /proc/self/limits (its soft "Max open files"; Node
 * raises the soft limit to the hard one when it starts): a sixteenth of it, between {@link MIN_KEPT_FOLDERS} and
 * {@link MAX_KEPT_FOLDERS}. Unreadable or absent: the minimum.
 */
export function keptFolderBudget(limits: string | undefined): number {
  const line = limits?.split("\n").find((row) => row.startsWith("Max open files"));
  const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
  if (soft === undefined) return MIN_KEPT_FOLDERS;
  if (soft === "unlimited") return MAX_KEPT_FOLDERS;
  const limit = Number(soft);
  if (!Number.isSafeInteger(limit) || limit <= 0) return MIN_KEPT_FOLDERS;
  return Math.min(MAX_KEPT_FOLDERS, Math.max(MIN_KEPT_FOLDERS, Math.floor(limit / SHARE)));
}
