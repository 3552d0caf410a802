import { StorageFailedError, isAgentTapeError } from "../../core/errors.js";
import { typedStorageError } from "../typed-storage-errors.js";

// What PostgreSQL and the `pg` driver throw, as the library's typed errors (docs/postgres.md, "Errors"): a
// server that is down, a bad connection string, a role without rights, a full disk on the server all become
// STORAGE_FAILED, with the driver's error as `cause` and its SQLSTATE (or the socket's errno) as `osCode`.

/** A `pg` DatabaseError: the server answered with an error and a five-character SQLSTATE. */
export function isServerError(error: unknown): error is Error & { code: string; severity?: string } {
  return (
    error instanceof Error &&
    typeof (error as { code?: unknown }).code === "string" &&
    /^[0-9A-Z]{5}$/.test((error as unknown as { code: string }).code) &&
    "severity" in error
  );
}

/** SQLSTATEs of a lost connection: the server shut it (admin_shutdown, idle_session_timeout) or it never came. */
export function isConnectionLost(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && /^(08|57P)/.test(code)) return true;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return true; // ECONNRESET, EPIPE, …
  return /Connection terminated|not queryable|Client was closed|ended/i.test(error.message);
}

/** The typed error for what a PostgreSQL backend call threw; typed errors and aborts pass as they are. */
export function typedPostgresError(error: unknown): unknown {
  if (isAgentTapeError(error) || !(error instanceof Error)) return error;
  if (error.name === "AbortError") return error;
  const typed = typedStorageError(error);
  if (typed !== error) return typed; // a socket's errno (ECONNREFUSED from connect, ENOTFOUND, …)
  const driverError = error as Error & { code?: unknown; syscall?: string };
  const code = typeof driverError.code === "string" ? driverError.code : undefined;
  if (isServerError(error) || isConnectionLost(error) || /password|connect|SASL|database|role/i.test(error.message)) {
    // StorageFailedError names what the store could not do from `syscall`: the driver's error is the cause.
    driverError.syscall ??= "use its PostgreSQL database";
    return new StorageFailedError(driverError as NodeJS.ErrnoException, code ?? "EPG");
  }
  return error;
}
