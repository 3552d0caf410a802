import { InvalidArgumentError } from "../core/errors.js";
import { assertTouchesNameTools } from "./touches-names.js";
import type { CheckpointStore } from "./checkpoint-store.js";
import { definedFields } from "../core/defined-fields.js";

/**
 * What one call of a tool may change, given its input: the workspace paths (files or folders) it names, or
 * `"shell"` for a tool that runs a command and cannot name them (`sed -i`, `rm -rf`, a code generator): its
 * call is captured by {@link CheckpointStore.aroundCommand} (the workspace index) instead.
 */
export type ToolTouches<Input = any> = ((input: Input) => readonly string[]) | "shell";

/** One call, as the hooks see it. */
export interface ToolCallInfo {
  tool: string;
  input: unknown;
  callId?: string;
  signal?: AbortSignal;
}

export type ToolOutcome = { ok: true; output: unknown } | { ok: false; error: unknown };

export interface CheckpointToolOptions<Call = any> {
  /**
   * Runs first, before the checkpoint: where a recorder appends the `tool_call`, so the tape reads call,
   * checkpoint, result. If it throws, nothing else runs and the call fails with its error.
   */
  beforeCall?: (call: ToolCallInfo) => Promise<void> | void;
  /**
   * Runs last, with what the tool returned or threw: where a recorder appends the `tool_result`. If it throws,
   * the call fails with its error (the tape no longer says what happened, so the run must not go on as if).
   */
  afterCall?: (call: ToolCallInfo, outcome: ToolOutcome) => Promise<void> | void;
  /** The framework's id for the call, from the arguments after the input. @default `call?.toolCallId` */
  callIdOf?: (call: Call, ...more: any[]) => string | undefined;
  /**
   * A call whose `touches` names a path outside the workspace (`../x`, an absolute path elsewhere, a link
   * leading out) or `""` (which would snapshot the whole workspace): `"refuse"` fails the call before the tool
   * runs with PATH_OUTSIDE_WORKSPACE, whose message names each path and why (a framework hands it to the model
   * as the tool's error); `"allow"` runs the tool, the path recorded `skipped` (a rewind cannot undo what the
   * tool did there). @default "refuse"
   */
  outsidePaths?: "refuse" | "allow";
  /** The call's abort signal, from the arguments after the input. @default `call?.abortSignal` */
  signalOf?: (call: Call, ...more: any[]) => AbortSignal | undefined;
}

/** Any tool with an `execute(input, call, …)`: the Vercel AI SDK's, OpenAI Agents', this repository's examples'. */
export interface ExecutableTool {
  execute?: ((input: any, ...rest: any[]) => unknown) | undefined;
  /** What a call may change; the `touches` argument of {@link withCheckpoints} overrides it. */
  touches?: ToolTouches | undefined;
}

type Execute<Input, Rest extends unknown[], Result> = (input: Input, ...rest: Rest) => Result;

/**
 * One tool's `execute`, checkpointed fail-closed: before it runs, the paths `touches` names are snapshotted
 * ({@link CheckpointStore.around}), or for `"shell"` the workspace index is brought up to date and the command's
 * changes recorded after it ({@link CheckpointStore.aroundCommand}). If the snapshot cannot be taken, the tool
 * does not run: an edit nobody can undo is worse than a failed call. With `touches` undefined the tool runs
 * without a checkpoint (it only reads), but the hooks still see it.
 */
export function checkpointTool<Input, Rest extends unknown[], Result>(
  checkpoints: CheckpointStore,
  sessionId: string,
  tool: string,
  touches: ToolTouches<Input> | undefined,
  execute: Execute<Input, Rest, Result>,
  options: CheckpointToolOptions<Rest[0]> = {},
): Execute<Input, Rest, Promise<Awaited<Result>>> {
  if (typeof tool !== "string" || tool.trim() === "")
    throw new InvalidArgumentError("checkpointTool() needs the tool's name.");
  if (touches !== undefined && touches !== "shell" && typeof touches !== "function")
    throw new InvalidArgumentError(
      `The touches of tool "${tool}" must be a function of its input or "shell", not ${JSON.stringify(touches)}.`,
    );
  const callIdOf = options.callIdOf ?? ((call: any) => stringOrUndefined(call?.toolCallId));
  const signalOf = options.signalOf ?? ((call: any) => signalOrUndefined(call?.abortSignal));
  const outsidePaths = options.outsidePaths ?? "refuse";
  return async function checkpointed(this: unknown, input: Input, ...rest: Rest): Promise<Awaited<Result>> {
    const callId = callIdOf(rest[0], ...rest.slice(1));
    const signal = signalOf(rest[0], ...rest.slice(1));
    const info: ToolCallInfo = { tool, input, ...definedFields({ callId, signal }) };
    await options.beforeCall?.(info);
    const run = async () => (await execute.call(this, input, ...rest)) as Awaited<Result>;
    const capture = { tool, ...definedFields({ callId, signal }) };
    let outcome: ToolOutcome;
    try {
      const output =
        touches === undefined
          ? await run()
          : touches === "shell"
            ? await checkpoints.aroundCommand(sessionId, capture, run)
            : await checkpoints.around(sessionId, { ...capture, paths: touches(input), outsidePaths }, run);
      outcome = { ok: true, output };
    } catch (error) {
      outcome = { ok: false, error };
    }
    await options.afterCall?.(info, outcome);
    if (!outcome.ok) throw outcome.error;
    return outcome.output as Awaited<Result>;
  };
}

/**
 * The same tool map, with each tool's `execute` checkpointed by {@link checkpointTool}. A tool changes files
 * when `touches` names it (the way to mark tools from a map you do not own, such as an SDK's) or when it has
 * its own `touches`. Tools without `execute` are returned as they are; so is every tool that touches nothing,
 * unless hooks are given (a recorder sees every call).
 */
export function withCheckpoints<T extends Record<string, ExecutableTool>>(
  tools: T,
  checkpoints: CheckpointStore,
  sessionId: string,
  touches: { [Name in keyof T]?: ToolTouches } = {},
  options: CheckpointToolOptions = {},
): T {
  const named = touches as Record<string, ToolTouches | undefined>;
  assertTouchesNameTools(
    "withCheckpoints(tools, checkpoints, sessionId, touches)",
    "the touches argument",
    named,
    Object.keys(tools),
  );
  const hooked = options.beforeCall !== undefined || options.afterCall !== undefined;
  const wrapped: Record<string, ExecutableTool> = {};
  for (const [name, tool] of Object.entries(tools)) {
    const pathsOf = named[name] ?? tool.touches;
    const execute = tool.execute;
    wrapped[name] =
      execute && (pathsOf !== undefined || hooked)
        ? { ...tool, execute: checkpointTool(checkpoints, sessionId, name, pathsOf, execute.bind(tool), options) }
        : tool;
  }
  return wrapped as T;
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function signalOrUndefined(value: unknown): AbortSignal | undefined {
  return value instanceof AbortSignal ? value : undefined;
}
