// The assistant entries naming tool calls, which a call's hook waits for so the tape reads entry, call, result.
import type { ClaudeSessionEntry } from "./transcript.js";

/** The tool_use ids of assistant entries this process appended, and the hooks waiting for one. */
export function toolUseEntries() {
  const calls = new Set<string>();
  const waiters = new Map<string, (() => void)[]>();
  return {
    /** Notes the tool calls the appended entries name, waking the hooks that wait for them. */
    appended(entries: readonly ClaudeSessionEntry[]): void {
      for (const entry of entries)
        for (const id of toolUseIds(entry)) {
          calls.add(id);
          for (const wake of waiters.get(id) ?? []) wake();
          waiters.delete(id);
        }
    },
    /** Resolves once an entry naming `toolUseId` was appended, or after `ms`. */
    entryOf(toolUseId: string, ms: number): Promise<void> {
      if (calls.has(toolUseId)) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        const list = waiters.get(toolUseId) ?? [];
        list.push(() => {
          clearTimeout(timer);
          resolve();
        });
        waiters.set(toolUseId, list);
      });
    },
  };
}

/** The ids of the tool_use blocks of an assistant transcript entry. */
function toolUseIds(entry: ClaudeSessionEntry): string[] {
  const content = (entry.message as { content?: unknown } | undefined)?.content;
  if (entry.type !== "assistant" || !Array.isArray(content)) return [];
  return content.flatMap((block: { type?: unknown; id?: unknown }) =>
    block?.type === "tool_use" && typeof block.id === "string" ? [block.id] : [],
  );
}
