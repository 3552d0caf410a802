// How many folders one operation keeps open (held-workspace.ts): a share of the process's descriptor limit.

/** Never fewer kept than this, whatever the limit (past them the 16 used last are kept too). */
export const MIN_KEPT_FOLDERS = 16;
/** Never more: past it a walk is long enough that a reopen costs little beside it. */
export const MAX_KEPT_FOLDERS = 4096;
/** The budget when the limit cannot be read: an eighth of the usual 1,024. */
export const UNKNOWN_LIMIT_FOLDERS = 128;
/** One eighth of the limit: room for the caller's own descriptors and for other operations running at once. */
const SHARE = 8;

/**
 * The folders one operation may keep open, from the text of /proc/self/limits (its soft "Max open files"; Node
 * raises the soft limit to the hard one when it starts): an eighth of it, between {@link MIN_KEPT_FOLDERS} and
 * {@link MAX_KEPT_FOLDERS}. A fixed 256 took every descriptor of a process allowed 200: the plan of a rewind over
 * 300 folders could read none of its files (test/rewind/few-descriptors.process.test.ts). Unreadable or absent:
 * {@link UNKNOWN_LIMIT_FOLDERS}.
 */
export function keptFolderBudget(limits: string | undefined): number {
  const line = limits?.split("\n").find((row) => row.startsWith("Max open files"));
  const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
  if (soft === undefined) return UNKNOWN_LIMIT_FOLDERS;
  if (soft === "unlimited") return MAX_KEPT_FOLDERS;
  const limit = Number(soft);
  if (!Number.isSafeInteger(limit) || limit <= 0) return UNKNOWN_LIMIT_FOLDERS;
  return Math.min(MAX_KEPT_FOLDERS, Math.max(MIN_KEPT_FOLDERS, Math.floor(limit / SHARE)));
}
