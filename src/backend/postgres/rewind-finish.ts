// The database steps of a rewind as one transaction (LockedSession.finishRewind; docs/postgres.md, "Rewinds"):
// the statement that commits them all, and the one before it that copies the cut part and reads the line the cut
// keeps last.

/**
 * Columns to add to the archive copy's statement (archive.ts), with $6 the sequence to cut after: the line kept
 * last, which the cut may write again (as a batch's end). One round trip for the copy and that read.
 */
export function keptLineColumns(s: string): string {
  const last = `FROM ${s}.events WHERE incarnation = $1 AND sequence <= $6 ORDER BY sequence DESC LIMIT 1`;
  return `(SELECT sequence ${last}) AS kept_sequence, (SELECT line ${last}) AS kept_line`;
}

/** The line kept last (as {@link keptLineColumns} reads it without a copy): $1 incarnation, $2 the cut. */
export function keptLineStatement(s: string): string {
  return `SELECT sequence AS kept_sequence, line AS kept_line FROM ${s}.events WHERE incarnation = $1
           AND sequence <= $2 ORDER BY sequence DESC LIMIT 1`;
}

export interface KeptLine {
  kept_sequence: string | null;
  kept_line: string | null;
}

/**
 * The one statement (so one transaction, one commit) after the fence `f` that finishes a rewind's log: $3 the last
 * sequence kept, $4 its line written again (or null), $5 whether the log is cut at all, $6 blobs to delete, $7
 * records to delete (with their archived logs), $8/$9 the sequences and lines to append, $10/$11 the names and
 * values of the records to write. Its parts touch different rows (what is appended lies above every sequence
 * deleted or written again, the records written are not those deleted), as one statement needs. Returns whether
 * the fence held and how many lines went in.
 */
export function finishRewindStatement(s: string, fence: string): string {
  const held = "EXISTS (SELECT 1 FROM f)";
  return `WITH ${fence},
    d AS (DELETE FROM ${s}.events WHERE incarnation = $1 AND sequence > $3 AND $5 AND ${held}),
    c AS (INSERT INTO ${s}.cuts (incarnation, after_sequence) SELECT $1, $3 FROM f WHERE $5),
    u AS (UPDATE ${s}.events SET line = $4 WHERE incarnation = $1 AND sequence = $3 AND $4::text IS NOT NULL
            AND ${held}),
    b AS (DELETE FROM ${s}.blobs WHERE incarnation = $1 AND hash = ANY($6::text[]) AND ${held}),
    r AS (DELETE FROM ${s}.records WHERE incarnation = $1 AND name = ANY($7::text[]) AND ${held}),
    a AS (DELETE FROM ${s}.archived_logs WHERE incarnation = $1 AND name = ANY($7::text[]) AND ${held}),
    e AS (INSERT INTO ${s}.events (incarnation, sequence, line)
            SELECT $1, u.sequence, u.line FROM f, unnest($8::bigint[], $9::text[]) AS u(sequence, line) RETURNING 1),
    w AS (INSERT INTO ${s}.records (incarnation, name, value)
            SELECT $1, u.name, u.value FROM f, unnest($10::text[], $11::text[]) AS u(name, value)
            ON CONFLICT (incarnation, name) DO UPDATE SET value = EXCLUDED.value)
  SELECT (SELECT count(*) FROM f) AS fenced, (SELECT count(*) FROM e) AS appended`;
}
