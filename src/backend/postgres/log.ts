import { parseEventLine } from "../../core/envelope.js";
import { LogCorruptError, SessionNotFoundError, TapeRewoundError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import type { ReadEventsOptions } from "../types.js";
import type { Queryable, QueryResult } from "./queryable.js";

// Reading the log: pages by sequence, each one statement (its own snapshot), so no transaction stays open
// however slow the reader; a cut that passes under a paused reader is seen in the cut table of the next page's
// snapshot (docs/postgres.md, "Readers").

/**
 * Rows per page. One page is one round trip, and a page of lines is what a reader holds at once, so a long
 * replay's memory stays flat (docs/postgres.md, "Readers").
 */
const PAGE_ROWS = 2000;

/** Where a damaged line is reported: the schema's events table and the session. */
export function logName(schema: string, sessionId: string): string {
  return `PostgreSQL ${schema}.events of session "${sessionId}"`;
}

interface PageRow {
  incarnation: string;
  low: string | null;
  mark: string;
  sequence: string | null;
  line: string | null;
}

/** The log in sequence order, a page of events at a time. */
export async function* readLogPages(
  db: Queryable,
  s: string,
  schema: string,
  sessionId: string,
  options: ReadEventsOptions,
): AsyncGenerator<StoredEvent[]> {
  options.signal?.throwIfAborted();
  let incarnation: string | undefined; // the first page finds it, by the session's id
  const from = Math.max(1, Math.ceil(options.fromSequence ?? 1));
  const to = Math.min(Number.MAX_SAFE_INTEGER, Math.floor(options.toSequence ?? Number.MAX_SAFE_INTEGER));
  if (from > to) {
    await readPage(db, s, { sessionId }, "-1", 0, 0).then((page) => {
      if (!page.rows[0]) throw new SessionNotFoundError(sessionId); // an empty range of no session is not empty
    });
    return;
  }
  let after = from - 1; // the last sequence handed out (or below the range)
  let handedOut = false;
  let mark = "-1"; // cuts seen so far: -1 until the first page says
  let lineNumber = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const page = await readPage(db, s, incarnation ?? { sessionId }, mark, after, to);
    const first = page.rows[0];
    if (!first) throw new SessionNotFoundError(sessionId);
    incarnation = first.incarnation;
    // A cut below what this read handed out: those events are gone, and what follows now is another tape.
    if (mark !== "-1" && handedOut && first.low !== null && Number(first.low) < after)
      throw new TapeRewoundError(sessionId);
    mark = first.mark;
    const events: StoredEvent[] = [];
    let rows = 0;
    for (const row of page.rows) {
      if (row.sequence === null || row.line === null) continue;
      rows++;
      lineNumber++;
      const sequence = Number(row.sequence);
      let event = parseEventLine(row.line);
      if (typeof event !== "string" && event.sequence !== sequence)
        event = `the line says sequence ${event.sequence}, its row ${sequence}`;
      after = sequence;
      if (typeof event === "string") {
        const number = from === 1 ? lineNumber : await lineNumberOf(db, s, first.incarnation, sequence);
        if (!options.onCorrupt) {
          if (events.length > 0) yield events;
          throw new LogCorruptError(logName(schema, sessionId), number, event);
        }
        options.onCorrupt({ line: number, reason: event, text: row.line.slice(0, 200) });
        continue;
      }
      events.push(event);
    }
    if (events.length > 0) {
      handedOut = true;
      yield events;
    }
    if (rows < PAGE_ROWS) return;
  }
}

/**
 * One page: the cuts since `mark` and the next PAGE_ROWS events after `after`, in one snapshot. Sent as one
 * simple-protocol message of two statements, so the first (`enable_sort` off for this implicit transaction alone)
 * shapes the second's plan: on a table not analyzed yet the planner guesses a handful of rows and chooses to sort
 * every event after `after` (spilled to disk for a long log, each page again) over walking the key in order;
 * with sorting ruled out it walks the key, PAGE_ROWS rows and no more, whatever the statistics
 * (docs/postgres.md, "Readers"). The first page finds the session's incarnation by its id in the same statement
 * (no row: no session), so a read costs no round trip before its first page; later pages keep that incarnation,
 * whatever happens to the id meanwhile. The numbers and the id are inlined (no parameters in a multi-statement
 * message), so each is checked first: integers, and an id of the characters session ids allow (no quote).
 */
async function readPage(
  db: Queryable,
  s: string,
  incarnation: string | { sessionId: string },
  mark: string,
  after: number,
  to: number,
): Promise<QueryResult<PageRow>> {
  const numbers = [mark, after, to, PAGE_ROWS].map(String);
  if (typeof incarnation === "string") numbers.push(incarnation);
  if (!numbers.every((n) => /^-?\d{1,19}$/.test(n)))
    throw new Error(`A page of the log asked for with a bound that is not an integer: ${numbers.join(", ")}`);
  const [m, a, t, n] = numbers;
  let session: string;
  if (typeof incarnation === "string") session = `SELECT ${incarnation}::bigint AS incarnation`;
  else if (/^[A-Za-z0-9._-]{1,128}$/.test(incarnation.sessionId))
    session = `SELECT incarnation FROM ${s}.sessions WHERE id = '${incarnation.sessionId}'`;
  else throw new Error(`A page of the log asked for with a session id that is not one: ${incarnation.sessionId}`);
  const results = (await db.query(
    `SELECT set_config('enable_sort', 'off', true);
     SELECT x.incarnation, c.low, c.mark, e.sequence, e.line
       FROM (${session}) x
       CROSS JOIN LATERAL (SELECT min(after_sequence) FILTER (WHERE cut > ${m}) AS low,
                                  coalesce(max(cut), 0) AS mark
                             FROM ${s}.cuts WHERE incarnation = x.incarnation) c
       LEFT JOIN LATERAL (SELECT sequence, line FROM ${s}.events
                           WHERE incarnation = x.incarnation AND sequence > ${a} AND sequence <= ${t}
                           ORDER BY incarnation, sequence LIMIT ${n}) e ON true`,
  )) as unknown as QueryResult<PageRow>[];
  return results[1]!;
}

/** 1-based line number of the row `sequence`: how many rows come before it, plus one. */
async function lineNumberOf(db: Queryable, s: string, incarnation: string, sequence: number): Promise<number> {
  const found = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${s}.events WHERE incarnation = $1 AND sequence <= $2`,
    [incarnation, sequence],
  );
  return Number(found.rows[0]?.n ?? 0);
}

/** The last event of the log, undefined when it is empty; SESSION_NOT_FOUND when there is no session. */
export async function lastLoggedEvent(
  db: Queryable,
  s: string,
  schema: string,
  sessionId: string,
): Promise<StoredEvent | undefined> {
  const found = await db.query<{ incarnation: string; sequence: string | null; line: string | null }>(
    `SELECT x.incarnation, e.sequence, e.line
       FROM ${s}.sessions x
       LEFT JOIN LATERAL (SELECT sequence, line FROM ${s}.events WHERE incarnation = x.incarnation
                           ORDER BY sequence DESC LIMIT 1) e ON true
      WHERE x.id = $1`,
    [sessionId],
  );
  const row = found.rows[0];
  if (!row) throw new SessionNotFoundError(sessionId);
  if (row.line === null || row.sequence === null) return undefined;
  const event = parseEventLine(row.line);
  if (typeof event === "string") {
    const number = await lineNumberOf(db, s, row.incarnation, Number(row.sequence));
    throw new LogCorruptError(logName(schema, sessionId), number, event);
  }
  return event;
}
