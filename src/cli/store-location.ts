import { MissingPackageError, type SessionStoreOptions } from "../index.js";

/** The storage a store is opened on (the CLI sees the public entry only, so it names it through the options). */
export type StorageBackend = NonNullable<SessionStoreOptions["backend"]>;
import { UsageError } from "./command.js";

/**
 * What the CLI needs of the `agent-tape/postgres` entry. The CLI sees only the public entry (the layer rule),
 * so it loads the backend as any program would: by the package's own sub-entry, imported when asked for, so
 * the `pg` driver (an optional peer) loads only for a `--store postgres://…`.
 */
interface PostgresEntry {
  postgresBackend(options: { connectionString: string; schema?: string }): StorageBackend;
}

/** Where `--store` (or $AGENT_TAPE_STORE) points: a PostgreSQL database, and the schema in it. */
export interface PostgresLocation {
  connectionString: string;
  schema: string | undefined;
  /** The URL as shown to the user: its password hidden. */
  shown: string;
}

/**
 * Reads `--store`'s value: a `postgres://` or `postgresql://` URL, with the schema as a `schema` query parameter
 * (`postgres://host/db?schema=tenant_a`; the backend's default when absent), which the driver does not see.
 */
export function parseStoreUrl(value: string, from: string): PostgresLocation {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${from} takes a postgres://user@host:port/database URL; "${value}" is not a URL.`);
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:")
    throw new UsageError(
      `${from} takes a postgres://user@host:port/database URL (a folder of sessions is --root); ` +
        `"${url.protocol}" is not one.`,
    );
  const schema = url.searchParams.get("schema") ?? undefined;
  url.searchParams.delete("schema");
  const connectionString = url.toString();
  if (url.password !== "") url.password = "***";
  if (schema !== undefined) url.searchParams.set("schema", schema);
  return { connectionString, schema, shown: url.toString() };
}

/** The entry is named by the package, not by a path: in the build it stays the installed package's own. */
const POSTGRES_ENTRY = "agent-tape/postgres";

/**
 * The PostgreSQL backend for `location`, loaded on first use. PACKAGE_MISSING when the `pg` driver is not
 * installed beside agent-tape. The backend connects on its first query: opening it costs nothing.
 */
export async function openPostgresStore(location: PostgresLocation): Promise<StorageBackend> {
  let entry: PostgresEntry;
  try {
    entry = (await import(POSTGRES_ENTRY)) as PostgresEntry;
  } catch (error) {
    if (isMissingPg(error))
      throw new MissingPackageError("pg", "a --store postgres://… (the PostgreSQL driver)", error);
    throw error;
  }
  return entry.postgresBackend({
    connectionString: location.connectionString,
    ...(location.schema !== undefined && { schema: location.schema }),
  });
}

function isMissingPg(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return (
    (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
    typeof message === "string" &&
    /['"]pg['"]/.test(message)
  );
}
