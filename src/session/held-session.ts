import type { LockedSession } from "../backend/types.js";
import { InvalidArgumentError } from "../core/errors.js";
import type { EventInput, EventSchemas } from "../core/events.js";
import type { HeldSession, Known } from "./store-options.js";
import type { WritePath } from "./write-path.js";

/**
 * The user's view of a held lock: validated appends only, and only while `fn` runs. `end` (once `fn` has
 * settled) refuses every later call and waits for the appends still running, so a handle kept past
 * `withLock` or an append left unawaited never writes while the lock serves another caller.
 */
export function heldSession<E extends EventSchemas>(
  writes: WritePath,
  locked: LockedSession,
): { session: HeldSession<E>; end: () => Promise<void> } {
  let ended = false;
  const running = new Set<Promise<unknown>>();
  const appendMany = async (inputs: readonly { type: string; payload: unknown }[]): Promise<any[]> => {
    if (ended)
      throw new InvalidArgumentError(
        `This held session of "${locked.sessionId}" ended when its withLock returned: ` +
          "append inside the function given to withLock, or call withLock again.",
      );
    const events = writes.toEvents(locked.sessionId, inputs as readonly EventInput<Known<E>>[]);
    if (events.length === 0) return [];
    const appended = writes.appendLocked(locked, events);
    running.add(appended);
    try {
      return await appended;
    } finally {
      running.delete(appended);
    }
  };
  const session: HeldSession<E> = {
    sessionId: locked.sessionId,
    get lastSequence() {
      return locked.lastSequence;
    },
    append: async (input: { type: string; payload: unknown }) => (await appendMany([input]))[0]!,
    appendMany,
  };
  const end = async () => {
    ended = true;
    await Promise.allSettled([...running]);
  };
  return { session, end };
}
