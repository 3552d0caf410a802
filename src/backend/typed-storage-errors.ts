import { StorageFailedError, isAgentTapeError } from "../core/errors.js";
import type { LockedSession, StorageBackend } from "./types.js";

// Every failure the library can foresee is an AgentTapeError (docs/ARCHITECTURE.md, "Errors"): an OS
// error a backend call meets (ENOSPC, EROFS, EMFILE, EISDIR, ENOTDIR, …) leaves it as STORAGE_FAILED,
// the OS error as `cause`. Done once at the seam, so no single fs call inside the backend is missed.

/** The OS error as STORAGE_FAILED; anything else (typed errors, aborts, bugs) as it is. */
export function typedStorageError(error: unknown): unknown {
  if (isAgentTapeError(error) || typeof error !== "object" || error === null) return error;
  const { code, syscall } = error as NodeJS.ErrnoException;
  if (typeof code !== "string" || typeof syscall !== "string") return error;
  if (/^E[A-Z0-9]+$/.test(code)) return new StorageFailedError(error as NodeJS.ErrnoException);
  // Node's SystemError (fs.rm's ERR_FS_EISDIR) carries the OS code in `info`.
  const info = (error as { info?: { code?: unknown } }).info;
  if (code.startsWith("ERR_FS_") && typeof info?.code === "string")
    return new StorageFailedError(error as NodeJS.ErrnoException, info.code);
  return error;
}

/** How a backend turns what its storage threw into a typed error (or leaves it as it is). */
export type ErrorTyping = (error: unknown) => unknown;

async function* typedStream<T>(stream: AsyncGenerator<T>, typed: ErrorTyping): AsyncGenerator<T> {
  try {
    yield* stream;
  } catch (error) {
    throw typed(error);
  }
}

/** `target` whose methods fail with typed errors; `lock()`'s LockedSession and read streams too. */
function typedMethods<T extends object>(target: T, typed: ErrorTyping): T {
  const rethrowTyped = (error: unknown): never => {
    throw typed(error);
  };
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, key) {
      const value = Reflect.get(object, key, object);
      if (typeof value !== "function") return value;
      let method = wrapped.get(key);
      if (method === undefined) {
        method = (...args: unknown[]) => {
          let result: unknown;
          try {
            result = Reflect.apply(value, object, args);
          } catch (error) {
            rethrowTyped(error);
          }
          if (result instanceof Promise)
            return key === "lock"
              ? result.then((locked: LockedSession) => typedMethods(locked, typed), rethrowTyped)
              : result.catch(rethrowTyped);
          if (isAsyncGenerator(result)) return typedStream(result, typed);
          return result;
        };
        wrapped.set(key, method);
      }
      return method;
    },
  });
}

function isAsyncGenerator(value: unknown): value is AsyncGenerator<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as AsyncGenerator<unknown>)[Symbol.asyncIterator] === "function" &&
    typeof (value as AsyncGenerator<unknown>).next === "function"
  );
}

/**
 * The backend, its held sessions and its streams failing with typed errors only: OS errors as STORAGE_FAILED,
 * or as `typed` says for a backend whose storage fails in its own way (a database's errors).
 */
export function withTypedStorageErrors(
  backend: StorageBackend,
  typed: ErrorTyping = typedStorageError,
): StorageBackend {
  return typedMethods(backend, typed);
}
