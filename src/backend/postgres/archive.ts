import { createHash } from "node:crypto";
import type { ArchivedLog } from "../types.js";
import type { Queryable } from "./queryable.js";

// A rewind's archive of the log's bytes after its cut point (docs/postgres.md, "Appends, cuts and readers"): the
// lines of the cut events, each with its newline, exactly the bytes the fs backend copies into
// records/<name>.jsonl, kept in `archived_logs` beside the record they belong to, in parts of about
// ARCHIVE_PART_BYTES. Copied inside the database: no line comes through the client to be archived.

/** Bytes of a part: a part holds the lines that start in its span, so it is this plus one line at most. */
export const ARCHIVE_PART_BYTES = 1024 * 1024;

/**
 * The statement (after the fence `f`, with $1 incarnation, $3 name, $4 the sequence after which to copy, $5 the
 * part size) that copies the lines after $4 into record $3's parts, replacing any copy there: parts upserted,
 * parts past the new last one deleted (disjoint rows, so one statement does both). It returns whether the fence
 * held, the copy's bytes and lines, how many parts it has, and the sha256 of the first (the whole copy's when it
 * is the only one), then `moreColumns`. It commits without waiting for the WAL to reach the disk, as the fs
 * backend does not fsync its copy: the next durable commit on the connection (the cut) takes it along.
 */
export function archiveLogStatement(s: string, fence: string, moreColumns = ""): string {
  return `WITH ${fence},
    c AS (SELECT set_config('synchronous_commit', 'off', true)),
    r AS (SELECT sequence, line,
                 (sum(octet_length(line) + 1) OVER (ORDER BY sequence) - octet_length(line) - 1) / $5::bigint AS part
            FROM ${s}.events WHERE incarnation = $1 AND sequence > $4 AND EXISTS (SELECT 1 FROM f)),
    g AS (SELECT part, string_agg(convert_to(line, 'UTF8') || '\\x0a'::bytea, ''::bytea ORDER BY sequence) AS bytes,
                 count(*) AS events
            FROM r GROUP BY part),
    i AS (INSERT INTO ${s}.archived_logs (incarnation, name, part, bytes) SELECT $1, $3, part, bytes FROM g
            ON CONFLICT (incarnation, name, part) DO UPDATE SET bytes = EXCLUDED.bytes RETURNING 1),
    d AS (DELETE FROM ${s}.archived_logs WHERE incarnation = $1 AND name = $3 AND EXISTS (SELECT 1 FROM f)
            AND part > (SELECT coalesce(max(part), -1) FROM g))
  SELECT (SELECT count(*) FROM c) AS relaxed,
         (SELECT count(*) FROM f) AS fenced,${moreColumns ? ` ${moreColumns},` : ""}
         (SELECT coalesce(sum(octet_length(bytes)), 0) FROM g) AS bytes,
         (SELECT coalesce(sum(events), 0) FROM g) AS events,
         (SELECT count(*) FROM i) AS parts,
         (SELECT encode(sha256(bytes), 'hex') FROM g ORDER BY part LIMIT 1) AS first_sha256`;
}

export interface ArchiveCopied {
  fenced: string;
  bytes: string;
  events: string;
  parts: string;
  first_sha256: string | null;
}

/** What the copy made, as an {@link ArchivedLog}: the sha256 read back part by part when there is more than one. */
export async function archivedLogOf(copied: ArchiveCopied, parts: () => AsyncIterable<Buffer>): Promise<ArchivedLog> {
  const bytes = Number(copied.bytes);
  const events = Number(copied.events);
  if (Number(copied.parts) <= 1)
    return { bytes, events, sha256: copied.first_sha256 ?? createHash("sha256").digest("hex") };
  const hash = createHash("sha256");
  for await (const part of parts()) hash.update(part);
  return { bytes, events, sha256: hash.digest("hex") };
}

/**
 * The parts of record `name`'s archived log, in order, one statement each (no transaction held open): memory of
 * one part however long the copy. `where` selects the session: by incarnation, or by id through `sessions`.
 */
export async function* archivedLogParts(
  db: Queryable,
  s: string,
  session: { incarnation: string } | { id: string },
  name: string,
  signal?: AbortSignal,
): AsyncGenerator<Buffer> {
  const bySession =
    "incarnation" in session
      ? `a.incarnation = $1`
      : `a.incarnation = (SELECT incarnation FROM ${s}.sessions WHERE id = $1)`;
  const key = "incarnation" in session ? session.incarnation : session.id;
  for (let after = -1; ; ) {
    signal?.throwIfAborted();
    const found = await db.query<{ part: number; bytes: Buffer }>(
      `SELECT a.part, a.bytes FROM ${s}.archived_logs a WHERE ${bySession} AND a.name = $2 AND a.part > $3
        ORDER BY a.part LIMIT 1`,
      [key, name, after],
    );
    const row = found.rows[0];
    if (!row) return;
    after = row.part;
    yield row.bytes;
  }
}

/** The data-modifying part of a statement that removes record $3's archived log (fenced by `f`). */
export function deleteArchivedLog(s: string): string {
  return `DELETE FROM ${s}.archived_logs WHERE incarnation = $1 AND name = $3 AND EXISTS (SELECT 1 FROM f)`;
}
