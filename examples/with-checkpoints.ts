import type { CheckpointStore } from "../src/index.js"; // in your project: from "agent-tape"

/** The workspace paths (files or folders) one call of a tool may change, given its input. */
export type TouchedPaths = (input: any) => readonly string[];

/** Any tool with an `execute(input, call)`: this repo's plain tools, or an agent SDK's (Vercel AI SDK, …). */
interface ExecutableTool {
  execute?: ((input: any, call: any) => unknown) | undefined;
  touches?: TouchedPaths | undefined;
}

/**
 * The same tool map, except that every tool that changes files first stores a before-snapshot of
 * the paths it is about to touch (`CheckpointStore.around`), so `rewind` can put them back.
 *
 * A tool changes files when it has its own `touches` function, or when `touches` (the last
 * argument) names it — the way to mark tools from a map you do not own, such as an SDK's.
 * Every other tool is returned untouched. The call's `toolCallId` is recorded with the snapshot.
 *
 * If the snapshot cannot be taken, the tool does not run: an edit nobody can undo is worse than
 * a failed call.
 */
export function withCheckpoints<T extends Record<string, ExecutableTool>>(
  tools: T,
  checkpoints: CheckpointStore,
  sessionId: string,
  touches: { [Name in keyof T]?: TouchedPaths } = {},
): T {
  const named = touches as Record<string, TouchedPaths | undefined>;
  const wrapped: Record<string, ExecutableTool> = {};
  for (const [name, tool] of Object.entries(tools)) {
    const pathsOf = named[name] ?? tool.touches;
    const execute = tool.execute;
    if (!pathsOf || !execute) {
      wrapped[name] = tool;
      continue;
    }
    wrapped[name] = {
      ...tool,
      execute: (input: unknown, call?: { toolCallId?: string; abortSignal?: AbortSignal }) =>
        checkpoints.around(
          sessionId,
          {
            tool: name,
            paths: pathsOf(input),
            ...(call?.toolCallId !== undefined && { callId: call.toolCallId }),
            ...(call?.abortSignal !== undefined && { signal: call.abortSignal }),
          },
          () => execute.call(tool, input, call),
        ),
    };
  }
  return wrapped as T;
}
