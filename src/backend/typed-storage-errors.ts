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

function rethrowTyped(error: unknown): never {
  throw typedStorageError(error);
}

async function* typedStream<T>(stream: AsyncGenerator<T>): AsyncGenerator<T> {
  try {
    yield* stream;
  } catch (error) {
    rethrowTyped(error);
  }
}

/** `target` whose methods fail with typed errors; `lock()`'s LockedSession and read streams too. */
function typedMethods<T extends object>(target: T): T {
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
              ? result.then((locked: LockedSession) => typedMethods(locked), rethrowTyped)
              : result.catch(rethrowTyped);
          if (isAsyncGenerator(result)) return typedStream(result);
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

/** The backend, its held sessions and its streams failing with typed errors only. */
export function withTypedStorageErrors(backend: StorageBackend): StorageBackend {
  return typedMethods(backend);
}
