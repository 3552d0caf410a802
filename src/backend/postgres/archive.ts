// A rewind's archive of the log's bytes after its cut point (docs/postgres.md, "Archives"): kept beside the
// record it belongs to, in parts.

/** The data-modifying part of a statement that removes record $3's archived log (fenced by `f`). */
export function deleteArchivedLog(s: string): string {
  return `DELETE FROM ${s}.archived_logs WHERE incarnation = $1 AND name = $3 AND EXISTS (SELECT 1 FROM f)`;
}
