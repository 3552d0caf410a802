// The items written to the tape ahead of the runner, so that handing them over later does not write them twice.
import type { AgentInputItem } from "@openai/agents";
import { itemKey, itemToEvent } from "./items.js";

/**
 * Keys of the items written ahead of the runner (by the model and the tools), not yet handed to `addItems`: when
 * the runner hands them over at the run's end, they are on the tape already. A multiset: the same item may be
 * written twice.
 */
export function itemsWrittenAhead() {
  const counts = new Map<string, number>();
  const remember = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  return {
    remember,
    /** Takes one of `key` off; false when none was written ahead (the item is the runner's to write). */
    forget(key: string): boolean {
      const left = (counts.get(key) ?? 0) - 1;
      if (left > 0) counts.set(key, left);
      else counts.delete(key);
      return left >= 0;
    },
    clear(): void {
      counts.clear();
    },
    /**
     * The items of `items` whose keys are not among `onTape` (a multiset, consumed as matched), as events to
     * append in one write; they are remembered as written ahead.
     */
    missing(items: readonly AgentInputItem[], onTape: Map<string, number>): never[] {
      const fresh: AgentInputItem[] = [];
      for (const item of items) {
        const key = itemKey(item);
        const count = onTape.get(key) ?? 0;
        if (count > 0) onTape.set(key, count - 1);
        else fresh.push(item);
      }
      for (const item of fresh) remember(itemKey(item));
      return fresh.map(itemToEvent) as never[];
    },
  };
}

export type ItemsWrittenAhead = ReturnType<typeof itemsWrittenAhead>;
