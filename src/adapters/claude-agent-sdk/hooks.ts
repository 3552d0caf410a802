// Checkpoints for Claude Code's own tools, through the SDK's hooks. See docs/ARCHITECTURE.md, "Adapters".
import {
  type CheckpointStore,
  type CommandInProgress,
  InvalidArgumentError,
  type SessionStore,
  type ToolTouches,
} from "../../index.js";

/** Structurally the SDK's `HookCallback`: hooks run in the SDK's process, the tool waits for them. */
export type ClaudeHookCallback = (
  input: any,
  toolUseId: string | undefined,
  options: { signal: AbortSignal },
) => Promise<Record<string, unknown>>;

/** What `options.hooks` of the SDK's `query()` takes for the three events the checkpoints need. */
export type ClaudeCheckpointHooks = Record<
  "PreToolUse" | "PostToolUse" | "PostToolUseFailure",
  Array<{ hooks: ClaudeHookCallback[] }>
>;

/**
 * What Claude Code's file and shell tools touch: the file their input names (an absolute path, inside the tape's
 * workspace), or the whole workspace for a command. A tool not named here (Read, Grep, …) gets no checkpoint.
 */
export const CLAUDE_TOOL_TOUCHES: Record<string, ToolTouches> = {
  Write: (input: { file_path: string }) => [input.file_path],
  Edit: (input: { file_path: string }) => [input.file_path],
  MultiEdit: (input: { file_path: string }) => [input.file_path],
  NotebookEdit: (input: { notebook_path: string }) => [input.notebook_path],
  Bash: "shell",
};

export interface CheckpointHooksOptions {
  /** Touches of your own tools (MCP tools, say), or overrides of {@link CLAUDE_TOOL_TOUCHES}. */
  touches?: Record<string, ToolTouches>;
  /**
   * How long a call's hook waits for the transcript entry naming the call to reach the store (milliseconds), so
   * the tape reads entry, call, checkpoint, result and a rewind to before the call keeps the message that made
   * it. The SDK mirrors entries a moment after it starts the hooks with `sessionStoreFlush: "eager"`; with
   * "batched" it mirrors at the turn's end, every call waits this long, and the entry lands after the call.
   * @default 2000
   */
  entryWaitMs?: number;
}

/** What the hooks need of the session store adapter: the tape, and where each Claude session's transcript is. */
export interface HookContext {
  store: SessionStore<any>;
  checkpoints: CheckpointStore;
  /** The tape of a Claude session id; throws when no transcript of it has reached the store. */
  tapeOf(claudeSessionId: string): Promise<string>;
  /** Resolves once an assistant entry naming `toolUseId` is on the tape, or after `ms`. */
  callEntry(toolUseId: string, ms: number): Promise<void>;
}

type Pending = { tape: string; tool: string; paths: readonly string[] } | { tape: string; command: CommandInProgress };

/**
 * PreToolUse: appends a `tool_call` (the SDK's tool_use id as call id), then snapshots what the call will touch
 * (the named file, or the workspace index for a command), fail-closed: if either fails, the hook denies the call
 * and the tool does not run. PostToolUse / PostToolUseFailure: records what the call left (the command's
 * changes, or the file's after-state) and appends a `tool_result`.
 */
export function checkpointHooks(context: HookContext, options: CheckpointHooksOptions = {}): ClaudeCheckpointHooks {
  const touches = { ...CLAUDE_TOOL_TOUCHES, ...options.touches };
  for (const [name, value] of Object.entries(touches))
    if (value !== "shell" && typeof value !== "function")
      throw new InvalidArgumentError(`The touches of tool "${name}" must be a function of its input or "shell".`);
  const entryWaitMs = options.entryWaitMs ?? 2000;
  const { store, checkpoints } = context;
  const pending = new Map<string, Pending>();

  const before: ClaudeHookCallback = async (input, toolUseId) => {
    const tool = String(input?.tool_name ?? "");
    const touched = touches[tool];
    const callId = String(input?.tool_use_id ?? toolUseId ?? "");
    if (touched === undefined || callId === "") return {};
    try {
      // First the entry: once it is in, so is the session's tape, even on the first call of a new session.
      await context.callEntry(callId, entryWaitMs);
      const tape = await context.tapeOf(String(input.session_id));
      await store.append(tape, { type: "tool_call", payload: { callId, name: tool, input: input.tool_input } });
      if (touched === "shell")
        pending.set(callId, { tape, command: await checkpoints.beforeCommand(tape, { tool, callId }) });
      else {
        const paths = touched(input.tool_input);
        await checkpoints.capture(tape, { tool, callId, paths });
        pending.set(callId, { tape, tool, paths });
      }
      return {};
    } catch (error) {
      return {
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "deny",
          permissionDecisionReason: `agent-tape could not checkpoint this ${tool} call, so it did not run: ${
            (error as Error)?.message ?? String(error)
          }`,
        },
      };
    }
  };

  const after =
    (failed: boolean): ClaudeHookCallback =>
    async (input, toolUseId) => {
      const callId = String(input?.tool_use_id ?? toolUseId ?? "");
      const call = pending.get(callId);
      if (call === undefined) return {};
      pending.delete(callId);
      // The tool has run: a failure here cannot stop it, so it is the SDK's to report (a hook error).
      if ("command" in call) await checkpoints.afterCommand(call.command);
      else await checkpoints.after(call.tape, { tool: call.tool, callId, paths: call.paths });
      const output = failed ? input.error : input.tool_response;
      await store.append(call.tape, {
        type: "tool_result",
        payload: { callId, output: output ?? null, ...(failed && { isError: true }) },
      });
      return {};
    };

  return {
    PreToolUse: [{ hooks: [before] }],
    PostToolUse: [{ hooks: [after(false)] }],
    PostToolUseFailure: [{ hooks: [after(true)] }],
  };
}
