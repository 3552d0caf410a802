import { InvalidArgumentError, type SessionStore } from "../index.js";

/**
 * Refuses, when an adapter is set up, a store opened without the adapter's event types: otherwise the first item
 * the store cannot validate fails mid-run (an OpenAI Agents reasoning item, say), with advice to write a schema.
 * The message names the set to pass, as the user would import it.
 */
export function assertStoreKnows(
  store: SessionStore<any>,
  events: Record<string, unknown>,
  where: string,
  setName: string,
  entry: string,
): void {
  const missing = Object.keys(events).filter((type) => !store.knowsEventType(type));
  if (missing.length === 0) return;
  throw new InvalidArgumentError(
    `${where} needs a store that knows its event types (${missing.join(", ")}): open it as ` +
      `new SessionStore({ root, events: ${setName} }), with ${setName} from "${entry}" ` +
      `(beside your own types: events: { ...${setName}, ...yours }).`,
  );
}
