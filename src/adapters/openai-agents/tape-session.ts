// The SDK's `Session` on the tape: the conversation as the runner reads and hands it over.
import type { AgentInputItem, Session } from "@openai/agents";
import type { SessionStore } from "../../index.js";
import { ITEM_TYPES, MARK_TYPES, answerInterruptedCalls, foldItems, itemKey, itemToEvent } from "./items.js";
import type { openaiAgentsEvents } from "./items.js";
import type { ItemsWrittenAhead } from "./written-ahead.js";

export type OpenAIAgentsStore = SessionStore<typeof openaiAgentsEvents>;

/** The items on the tape, in order, less those popped or cleared. */
export async function readItems(store: OpenAIAgentsStore, sessionId: string) {
  return foldItems(await store.readAll(sessionId, { types: [...ITEM_TYPES, ...MARK_TYPES] }));
}

/**
 * `getItems` folds the tape (a call left without a result by a crash gets one saying it was interrupted);
 * `addItems` appends only the items not already written ahead; `popItem` and `clearSession` append a mark.
 */
export function tapeSession(store: OpenAIAgentsStore, sessionId: string, writtenAhead: ItemsWrittenAhead): Session {
  return {
    getSessionId: async () => sessionId,
    async getItems(limit?: number) {
      const items = answerInterruptedCalls((await readItems(store, sessionId)).map((taped) => taped.item));
      return limit === undefined ? items : limit <= 0 ? [] : items.slice(-limit);
    },
    async addItems(items: AgentInputItem[]) {
      const fresh = items.filter((item) => !writtenAhead.forget(itemKey(item)));
      if (fresh.length > 0) await store.appendMany(sessionId, fresh.map(itemToEvent) as never);
    },
    async popItem() {
      return store.withLock(sessionId, async (held) => {
        const last = (await readItems(store, sessionId)).at(-1);
        if (last === undefined) return undefined;
        await held.append({ type: "openai_item_popped", payload: { sequence: last.sequence } });
        return last.item;
      });
    },
    async clearSession() {
      writtenAhead.clear();
      await store.append(sessionId, { type: "openai_items_cleared", payload: {} });
    },
  };
}
