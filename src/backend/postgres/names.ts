import { createHash } from "node:crypto";
import { InvalidArgumentError } from "../../core/errors.js";

// The names a PostgreSQL backend puts into SQL: the schema (an identifier, checked, never a parameter) and the
// advisory-lock keys of its sessions and of its migrations.

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The schema's name quoted for SQL, after checking it is a plain lowercase identifier. */
export function quotedSchema(schema: string): string {
  if (!SCHEMA_NAME.test(schema))
    throw new InvalidArgumentError(
      `Invalid PostgreSQL schema name ${JSON.stringify(schema)}: use 1-63 characters from a-z 0-9 _, ` +
        `not starting with a digit.`,
    );
  return `"${schema}"`;
}

/**
 * The two 31-bit keys of an advisory lock named by `parts`. Two keys (pg_advisory_lock(int, int)) show in
 * pg_locks as classid and objid with objsubid 2, so a waiter is found without arithmetic on oids. A collision
 * of two names (one in 2^62) only makes one wait for the other: every write is fenced by the session's epoch.
 */
export function advisoryKeys(...parts: string[]): [number, number] {
  const digest = createHash("sha256").update(parts.join("\0")).digest();
  return [digest.readUInt32BE(0) & 0x7fffffff, digest.readUInt32BE(4) & 0x7fffffff];
}
